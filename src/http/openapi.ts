import { type INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { PUBLIC_KEY, ROLES_KEY } from '../auth/auth.guard';
import { SESSION_COOKIE } from '../auth/console-sessions';
import { PROJECT_STATUSES } from '../projects/domain/project-events';
import { RUN_STATUSES } from '../team/domain/run-events';
import { controllerMethods } from './controller-methods';
import { errorResponses, SUCCESSES, type RouteTraits } from './openapi-responses';
import { RESPONSE_SCHEMAS, type JsonSchema } from './openapi-schemas';

// class-transformer's metadata (nested `@Type`s) lives in its CommonJS build; its types are apart.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as { defaultMetadataStorage: MetadataStorage };

type Schema = { properties?: Record<string, unknown>; required?: string[] };
type Parameter = { name: string; in: string; required?: boolean; schema?: unknown; description?: string };
type Operation = {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { $ref?: string } }> };
  responses: Record<string, unknown>;
  security?: unknown[];
};

const integer = (minimum: number, maximum: number, defaultValue?: number): JsonSchema => ({ type: 'integer', minimum, maximum, ...(defaultValue === undefined ? {} : { default: defaultValue }) });
const REVISION = integer(0, Number.MAX_SAFE_INTEGER, 0);

/**
 * The schemas of query parameters read as single values (`@Query('name')`, parsed in the handler):
 * what the handler accepts, by operation and name. Numbers are sent as decimal digits.
 */
const QUERY_SCHEMAS: Readonly<Record<string, Record<string, JsonSchema>>> = {
  RunsController_list: { status: { type: 'string', enum: [...RUN_STATUSES] }, limit: integer(1, 1000, 100) },
  RunsController_wait: { timeoutMs: integer(0, 600_000, 30_000) },
  RunsController_events: { fromRevision: REVISION },
  SessionController_workspace: { iteration: integer(1, 1000) },
  SessionController_context: { revision: integer(0, Number.MAX_SAFE_INTEGER) },
  ProjectsController_list: { status: { type: 'string', enum: [...PROJECT_STATUSES] }, limit: integer(1, 1000, 100) },
  ProjectsController_events: { fromRevision: REVISION },
  // The DTO holds them as text: their range depends on the format (docs/API.md "Limits").
  DecisionsController_list: { limit: integer(1, 999_999_999), afterSeq: integer(0, 999_999_999_999_999) },
  WebhooksController_deliveries: { limit: integer(1, 100, 20) },
};

/** Event streams resume after the last event a client saw. */
const LAST_EVENT_ID: Parameter = { name: 'Last-Event-ID', in: 'header', required: false, description: 'with `Accept: text/event-stream`: resume after this revision', schema: integer(0, Number.MAX_SAFE_INTEGER) };
const STREAMS = new Set(['RunsController_events', 'ProjectsController_events']);
/** The agent card's shape follows the A2A version the client speaks. */
const A2A_VERSION: Parameter = { name: 'A2A-Version', in: 'header', required: false, description: '`1.0`: the card in A2A 1.0\'s shape; none or `0.3`: in 0.3\'s', schema: { type: 'string', enum: ['0.3', '1.0'] } };

/**
 * The OpenAPI document, generated from the app: @nestjs/swagger reads the routes, their path and
 * query parameters and body types; the schemas come from the DTOs' own class-validator decorators
 * (class-validator-jsonschema), so the rules the validation pipe enforces and the document cannot
 * drift apart. The answers — each route's success and the errors it can give — are
 * openapi-responses.ts's, their bodies' schemas openapi-schemas.ts's; which errors apply, and the
 * security, follow from the same route metadata the guards read. Served at `/openapi.json`, with
 * Swagger UI at `/docs` (its assets served from the bundled swagger-ui-dist, no CDN); the typed
 * client's types are generated from it (scripts/generate-client.js).
 */
export function openApiDocument(app: INestApplication, version: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('triad')
    .setDescription(
      'Event-sourced orchestrator for teams of LLM agents. Routes under /v1 need `Authorization: Bearer <API key>` (or a web console session). ' +
        'Errors are `{statusCode, error, message}` (docs/API.md). ' +
        'The A2A (`POST /a2a`) and MCP (`POST /mcp`) JSON-RPC endpoints are not described here: their protocols and SDKs define them.',
    )
    .setVersion(version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'an API key (`triad keys add`, or TRIAD_API_KEYS)' }, 'apiKey')
    .addCookieAuth(SESSION_COOKIE, { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: "the web console's session (POST /v1/session); requests that change state also send its X-CSRF-Token" }, 'consoleSession')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'TRIAD_METRICS_KEY, when it is set' }, 'metricsKey')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  const schemas = validationMetadatasToSchemas({ refPointerPrefix: '#/components/schemas/', classTransformerMetadataStorage: defaultMetadataStorage }) as Record<string, Schema>;
  schemas.Error = {
    type: 'object',
    required: ['statusCode', 'error', 'message'],
    properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } },
  } as Schema;
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...(schemas as Record<string, object>), ...RESPONSE_SCHEMAS } };
  const traits = routeTraits(app);

  const { dtos: queryDtos, named: namedQueries } = queryInputs(app);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
      if (typeof op !== 'object' || op === null || !('responses' in op)) continue;
      const id = op.operationId ?? '';
      // The Authorization header is the security scheme's, not a parameter (metrics reads it itself).
      op.parameters = (op.parameters ?? []).filter((p) => !(p.in === 'header' && p.name.toLowerCase() === 'authorization'));
      for (const name of namedQueries.get(id) ?? []) {
        if (!op.parameters.some((p) => p.in === 'query' && p.name === name)) op.parameters.push({ name, in: 'query', schema: { type: 'string' } });
      }
      // A whole-query DTO: its validated properties are the query parameters.
      const dto = queryDtos.get(id);
      for (const [name, s] of Object.entries((dto ? schemas[dto] : undefined)?.properties ?? {})) {
        op.parameters = [...op.parameters.filter((p) => !(p.in === 'query' && p.name === name)), { name, in: 'query', schema: s }];
      }
      for (const p of op.parameters) {
        // Every query parameter is optional (each route states its default in docs/API.md).
        if (p.in === 'query') p.required = false;
        if (p.in === 'query' && QUERY_SCHEMAS[id]?.[p.name]) p.schema = QUERY_SCHEMAS[id][p.name];
      }
      if (STREAMS.has(id)) op.parameters.push(LAST_EVENT_ID);
      if (id === 'A2aController_card') op.parameters.push(A2A_VERSION);
      // A body whose every field is optional may be left out (`POST /v1/runs/:id/cancel` sent bare).
      const body = op.requestBody?.content?.['application/json']?.schema?.$ref?.split('/').pop();
      if (op.requestBody && body && !(schemas[body]?.required ?? []).length) op.requestBody.required = false;
      const route = traits.get(id) ?? { authenticated: path.startsWith('/v1/'), roles: false, stateChanging: method !== 'get', pathValues: path.includes('{') };
      op.responses = responsesOf(id, route, op.responses);
      op.security = id === 'MetricsController_metrics' ? [{}, { metricsKey: [] }] : route.authenticated ? [{ apiKey: [] }, { consoleSession: [] }] : [];
    }
  }
  return document;
}

/** The success and error responses of an operation; @nestjs/swagger's own guess where none is declared. */
function responsesOf(id: string, traits: RouteTraits, guessed: Record<string, unknown>): Record<string, unknown> {
  const success = SUCCESSES[id];
  const responses: Record<string, unknown> = success
    ? {
        [success.status]: {
          description: success.description,
          ...(success.content ? { content: Object.fromEntries(Object.entries(success.content).map(([type, schema]) => [type, { schema }])) } : {}),
        },
      }
    : { ...guessed };
  for (const [status, error] of Object.entries(errorResponses(id, traits))) {
    responses[status] = { description: error.description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${error.schema}` } } } };
  }
  return responses;
}

/** What each operation is, by `Controller_method`, read off the same metadata the guards read. */
function routeTraits(app: INestApplication): Map<string, RouteTraits> {
  const traits = new Map<string, RouteTraits>();
  for (const { controller, method } of controllerMethods(app)) {
    const handler = (controller.prototype as Record<string, unknown>)[method];
    if (typeof handler !== 'function') continue;
    const verb = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
    const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
    if (verb === undefined || path === undefined) continue;
    const meta = <T>(key: string): T | undefined => (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller)) as T | undefined;
    traits.set(`${controller.name}_${method}`, {
      authenticated: meta<boolean>(PUBLIC_KEY) !== true,
      roles: (meta<string[]>(ROLES_KEY) ?? []).length > 0,
      stateChanging: verb !== RequestMethod.GET,
      pathValues: path.includes(':'),
    });
  }
  return traits;
}

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
