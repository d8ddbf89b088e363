import { BadRequestException, type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { getMetadataStorage } from 'class-validator';
import type { Request } from 'express';
import { describeIllFormed, isWellFormedText } from '../shared/text';

/**
 * One rule for the query string, path values and body presence of every route, read off the
 * handler's own signature so no controller repeats it: a route accepts exactly the query
 * parameters it declares — `@Query('name')`, or the validated properties of a `@Query() dto` —
 * each at most once, and body fields only if it takes a `@Body()` (400 otherwise). Query and path values must be well-formed text without NUL (400): a store
 * such as PostgreSQL cannot hold NUL, and an id that could never exist is malformed, not missing.
 * Values stay strings: each route parses its own numbers strictly (no coercion here).
 */

interface RouteArg {
  index: number;
  data?: unknown;
}

interface DeclaredInputs {
  query: ReadonlySet<string>;
  body: boolean;
}

const declared = new WeakMap<object, DeclaredInputs>();

/** The query parameter names a handler declares, and whether it reads a body. */
export function declaredInputs(controller: object, handler: { name: string }): DeclaredInputs {
  const cached = declared.get(handler);
  if (cached) return cached;
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler.name) ?? {}) as Record<string, RouteArg>;
  const types = (Reflect.getMetadata('design:paramtypes', (controller as { prototype: object }).prototype, handler.name) ?? []) as unknown[];
  const names = new Set<string>();
  let body = false;
  for (const [key, arg] of Object.entries(args)) {
    const type = Number(key.split(':')[0]);
    body ||= type === RouteParamtypes.BODY || type === RouteParamtypes.RAW_BODY;
    if (type !== RouteParamtypes.QUERY) continue;
    if (typeof arg.data === 'string') names.add(arg.data);
    else if (typeof types[arg.index] === 'function') {
      // A whole-query DTO: the properties class-validator knows of it.
      for (const m of getMetadataStorage().getTargetValidationMetadatas(types[arg.index] as new () => object, '', true, false)) names.add(m.propertyName);
    }
  }
  const inputs = { query: names, body };
  declared.set(handler, inputs);
  return inputs;
}

function checkValue(where: string, value: unknown): void {
  if (Array.isArray(value)) throw new BadRequestException(`${where} is given more than once`);
  if (typeof value !== 'string') throw new BadRequestException(`${where} is malformed`);
  if (!isWellFormedText(value)) throw new BadRequestException(`${where} ${describeIllFormed(value)}; text must be well-formed Unicode without NUL`);
}

/**
 * A guard, not an interceptor: it runs after authentication (the app-wide API-key guard is
 * registered first) and before any pipe, and it keeps Nest's request path free of interceptors,
 * which would wrap every handler in an Observable chain.
 */
@Injectable()
export class RouteInputsGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request>();
    const { query: allowed, body } = declaredInputs(context.getClass(), context.getHandler());
    const query = (req.query ?? {}) as Record<string, unknown>;
    for (const name of Object.keys(query)) {
      if (!allowed.has(name)) {
        throw new BadRequestException(allowed.size === 0 ? `this route takes no query parameters (got ${name})` : `unknown query parameter ${name}; accepted: ${[...allowed].join(', ')}`);
      }
      checkValue(`query parameter ${name}`, query[name]);
    }
    for (const [name, value] of Object.entries(req.params ?? {})) checkValue(`path parameter ${name}`, value);
    // A route without a body parameter would silently ignore fields sent to it.
    if (!body && typeof req.body === 'object' && req.body !== null && Object.keys(req.body as object).length > 0) {
      throw new BadRequestException('this route takes no body fields');
    }
    return true;
  }
}
