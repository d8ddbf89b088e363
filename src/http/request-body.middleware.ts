import { BadRequestException, UnsupportedMediaTypeException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { bodyLimitViolation, rawJsonShapeViolation } from './body-limits';
import { duplicateKeyIn, duplicateKeyMessage } from '../shared/strict-json';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A body is there when it is chunked or has a non-zero length (fetch sends `content-length: 0` for none). */
function hasBody(req: Request): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * Express middleware before the body parser: a state-changing request that carries a body or
 * names a content type must be `application/json` (415, nothing done); without either it is
 * accepted, so `POST /v1/runs/:id/cancel` or `/resume` may be sent bare. Otherwise a `text/plain`
 * body would be skipped by the JSON parser and the route would act on an empty body.
 * A charset, when given, must be UTF-8: the body's limits are checked on its bytes.
 */
export function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
  if (!STATE_CHANGING.has(req.method)) return next();
  const type = req.headers['content-type'];
  if (type === undefined && !hasBody(req)) return next();
  const [mediaType, ...params] = (type ?? '').toLowerCase().split(';').map((p) => p.trim());
  if (mediaType !== 'application/json') return next(new UnsupportedMediaTypeException(`${req.method} requests take an application/json body`));
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"(.*)"$/, '$1');
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return next(new UnsupportedMediaTypeException('JSON bodies are read as UTF-8 only'));
  next();
}

/**
 * Express middleware after the JSON body parser: a body must be a JSON object within the limits
 * (400 otherwise). A request without a body gets `{}`, so optional-body routes see no fields.
 */
export function enforceBodyLimits(req: Request, _res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  if (body === undefined) {
    req.body = {};
    return next();
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return next(new BadRequestException('the body must be a JSON object'));
  const violation = bodyLimitViolation(body);
  next(violation === undefined ? undefined : new BadRequestException(violation));
}

/**
 * The JSON body parser's `verify` hook: refuses a body nested too deep or holding too many values
 * before JSON.parse reads it (400), so parsing stays cheap whatever arrives, and a body naming a key
 * twice in one object (400 naming it: JSON.parse would keep the last, another reader the first).
 */
export function verifyJsonShape(_req: unknown, _res: unknown, buf: Buffer): void {
  const shape = rawJsonShapeViolation(buf);
  // Within the limits only: the duplicate scan then walks a small tree.
  const duplicate = shape === undefined ? duplicateKeyIn(buf) : undefined;
  const violation = shape ?? (duplicate === undefined ? undefined : duplicateKeyMessage(duplicate));
  // The status travels through the body parser's error to a 400 with this message.
  if (violation !== undefined) throw Object.assign(new Error(violation), { status: 400, statusCode: 400, expose: true, type: 'entity.verify.failed' });
}

/**
 * Express error middleware after the JSON body parser: a compressed body that does not decompress
 * is `400` naming its Content-Encoding, not zlib's own words ("incorrect header check"). The body
 * parser's own refusals carry a `type` (`entity.parse.failed`, `entity.too.large`, …); a
 * decompression failure is the only 400 without one.
 */
export function describeDecodingErrors(err: unknown, req: Request, _res: Response, next: NextFunction): void {
  const e = err as { status?: unknown; type?: unknown } | null;
  const encoding = String(req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (e !== null && typeof e === 'object' && e.status === 400 && e.type === undefined && encoding !== '' && encoding !== 'identity') {
    return next(new BadRequestException(`the request body is not valid ${encoding} data`));
  }
  next(err);
}
