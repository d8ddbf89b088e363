import { type INestApplication, MethodNotAllowedException, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import type { NextFunction, Request, Response } from 'express';
import { controllerMethods } from './controller-methods';

interface RoutePath {
  pattern: RegExp;
  methods: Set<string>;
}

/**
 * A request whose path is a route's but whose method is none of that path's is `405` with an
 * `Allow` header naming the methods it takes (`PUT /v1/runs`: `Allow: GET, HEAD, POST`), not the
 * `404` Express would answer. The routes are the controllers' own (read once, on the first
 * request); paths no controller declares (the console's files, /docs) are left to what serves them.
 * OPTIONS on a route's path is `204` with the same `Allow` header.
 */
export function methodNotAllowed(app: INestApplication): (req: Request, res: Response, next: NextFunction) => void {
  let routes: RoutePath[] | undefined;
  return (req, res, next) => {
    routes ??= controllerRoutes(app);
    const path = req.path;
    let matched: RoutePath[] | undefined;
    for (const route of routes) {
      if (!route.pattern.test(path)) continue;
      // The common case, a method the path takes, costs no allocation.
      if (route.methods.has(req.method) || route.methods.has('ALL')) return next();
      (matched ??= []).push(route);
    }
    if (!matched) return next();
    const allowed = new Set<string>();
    for (const route of matched) for (const m of route.methods) allowed.add(m);
    allowed.add('OPTIONS');
    const allow = [...allowed].sort().join(', ');
    res.setHeader('Allow', allow);
    if (req.method === 'OPTIONS') {
      res.status(204).end();
      return;
    }
    next(new MethodNotAllowedException(`${req.method} is not allowed here; this path takes ${allow}`));
  };
}

function controllerRoutes(app: INestApplication): RoutePath[] {
  const byPath = new Map<string, Set<string>>();
  for (const { controller, method: name } of controllerMethods(app)) {
    const handler = (controller.prototype as Record<string, unknown>)[name];
    if (typeof handler !== 'function') continue;
    const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
    const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
    if (method === undefined || path === undefined) continue;
    const prefix = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    const full = `/${[prefix, path].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`;
    const methods = byPath.get(full) ?? new Set<string>();
    const verb = RequestMethod[method];
    methods.add(verb);
    if (verb === 'GET') methods.add('HEAD');
    byPath.set(full, methods);
  }
  return [...byPath].map(([path, methods]) => ({ pattern: pathPattern(path), methods }));
}

/** `/v1/runs/:id/events` as a regex on the request's path (a trailing slash allowed, as Express allows it). */
function pathPattern(path: string): RegExp {
  const parts = path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${parts.join('/')}/?$`, 'i');
}
