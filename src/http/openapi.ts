import type { INestApplication } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { controllerMethods } from './controller-methods';

// class-transformer's metadata (nested `@Type`s) lives in its CommonJS build; its types are apart.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as { defaultMetadataStorage: MetadataStorage };

type Schema = { properties?: Record<string, unknown>; required?: string[] };
type Operation = { operationId?: string; parameters?: Array<{ name: string; in: string; required?: boolean; schema?: unknown }>; responses: Record<string, unknown>; security?: unknown[] };

/**
 * The OpenAPI document, generated from the app: @nestjs/swagger reads the routes, their path and
 * query parameters and body types; the schemas come from the DTOs' own class-validator decorators
 * (class-validator-jsonschema), so the rules the validation pipe enforces and the document cannot
 * drift apart. Served at `/openapi.json`, with Swagger UI at `/docs` (its assets served from the
 * bundled swagger-ui-dist, no CDN).
 */
export function openApiDocument(app: INestApplication, version: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('triad')
    .setDescription(
      'Event-sourced orchestrator for teams of LLM agents. Routes under /v1 need `Authorization: Bearer <API key>`. ' +
        'Errors are `{statusCode, error, message}` (docs/API.md).',
    )
    .setVersion(version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'an API key (`triad keys add`, or TRIAD_API_KEYS)' }, 'apiKey')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  const schemas = validationMetadatasToSchemas({ refPointerPrefix: '#/components/schemas/', classTransformerMetadataStorage: defaultMetadataStorage }) as Record<string, Schema>;
  schemas.Error = {
    type: 'object',
    required: ['statusCode', 'error', 'message'],
    properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } },
  } as Schema;
  Object.assign(schemas, USAGE_SCHEMAS);
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...(schemas as Record<string, object>) } };
  // A run's view: its usage described field by field (the rest of RunSummary in docs/API.md).
  const getRun = (document.paths['/v1/runs/{id}'] as Record<string, Operation> | undefined)?.get;
  if (getRun) getRun.responses['200'] = { description: 'the run', content: { 'application/json': { schema: { $ref: '#/components/schemas/RunView' } } } };

  const { dtos: queryDtos, named: namedQueries } = queryInputs(app);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const op of Object.values(item as Record<string, Operation>)) {
      if (typeof op !== 'object' || op === null || !('responses' in op)) continue;
      for (const name of (op.operationId && namedQueries.get(op.operationId)) || []) {
        if (!(op.parameters ?? []).some((p) => p.in === 'query' && p.name === name)) op.parameters = [...(op.parameters ?? []), { name, in: 'query', schema: { type: 'string' } }];
      }
      // Every query parameter is optional (each route states its default in docs/API.md).
      for (const p of op.parameters ?? []) if (p.in === 'query') p.required = false;
      // A whole-query DTO: its validated properties are the query parameters.
      const dto = op.operationId ? queryDtos.get(op.operationId) : undefined;
      const schema = dto ? schemas[dto] : undefined;
      for (const [name, s] of Object.entries(schema?.properties ?? {})) {
        op.parameters = [...(op.parameters ?? []).filter((p) => !(p.in === 'query' && p.name === name)), { name, in: 'query', required: false, schema: s }];
      }
      op.responses.default = { description: 'an error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      op.security = path.startsWith('/v1/') ? [{ apiKey: [] }] : [];
    }
  }
  return document;
}

const TOKENS = { type: 'integer', minimum: 0 };
const TOKEN_FIELDS = {
  inputTokens: { ...TOKENS, description: "the prompt's tokens not read from the prompt cache" },
  outputTokens: TOKENS,
  cacheReadTokens: { ...TOKENS, description: 'prompt tokens read from the cache (billed at 0.1x input)' },
  cacheWriteTokens: { ...TOKENS, description: 'prompt tokens written to the cache (billed at 1.25x input)' },
};
const TOKEN_NAMES = Object.keys(TOKEN_FIELDS);

/** The usage of a run and of each of its roles (src/team/runs/run-summary.ts RunUsage). */
const USAGE_SCHEMAS: Record<string, Schema> = {
  RoleUsage: { type: 'object', required: [...TOKEN_NAMES, 'turns'], properties: { ...TOKEN_FIELDS, turns: TOKENS } } as Schema,
  RunUsage: {
    type: 'object',
    required: [...TOKEN_NAMES, 'costUsd', 'turns', 'byRole'],
    properties: {
      ...TOKEN_FIELDS,
      costUsd: { type: 'number', minimum: 0, description: 'all four token counts priced (src/team/domain/pricing.ts)' },
      turns: TOKENS,
      byRole: {
        type: 'object',
        required: ['architect', 'executor', 'reviewer'],
        properties: Object.fromEntries(['architect', 'executor', 'reviewer'].map((role) => [role, { $ref: '#/components/schemas/RoleUsage' }])),
      },
    },
  } as Schema,
  RunView: {
    type: 'object',
    required: ['runId', 'status', 'usage'],
    properties: { runId: { type: 'string' }, status: { type: 'string' }, usage: { $ref: '#/components/schemas/RunUsage' } },
    additionalProperties: true,
  } as Schema,
};

/**
 * `Controller_method` → the class name of the handler's whole-query DTO (`@Query() dto`), and the
 * names of its single query parameters (`@Query('name')`), which @nestjs/swagger leaves out of a
 * handler that also takes the raw request or response (the event streams).
 */
function queryInputs(app: INestApplication): { dtos: Map<string, string>; named: Map<string, string[]> } {
  const found = new Map<string, string>();
  const named = new Map<string, string[]>();
  for (const { controller, method } of controllerMethods(app)) {
    const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, method) ?? {}) as Record<string, { index: number; data?: unknown }>;
    const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, method) ?? []) as unknown[];
    for (const [key, arg] of Object.entries(args)) {
      const type = types[arg.index];
      if (Number(key.split(':')[0]) !== RouteParamtypes.QUERY) continue;
      const operationId = `${controller.name}_${method}`;
      if (arg.data === undefined && typeof type === 'function') found.set(operationId, type.name);
      if (typeof arg.data === 'string') named.set(operationId, [...(named.get(operationId) ?? []), arg.data]);
    }
  }
  return { dtos: found, named };
}

export function serveOpenApi(app: INestApplication, version: string): void {
  SwaggerModule.setup('docs', app, () => openApiDocument(app, version), {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'triad API',
  });
}
