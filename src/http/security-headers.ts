import helmet from 'helmet';
import type { NextFunction, Request, Response } from 'express';

/**
 * Response headers of every answer, set with helmet: a strict Content-Security-Policy (no inline
 * script anywhere, nothing from another origin, no framing), nosniff, no referrer, no
 * X-Powered-By; and `Cache-Control: no-store` on everything but the console's own files (which
 * set their own caching), so no proxy or browser cache keeps an API answer.
 *
 * The API docs viewer (Swagger UI at /docs) gets the same policy but for styles: it styles its
 * elements inline, so `style-src` allows inline styles there, and there only. Its scripts are files.
 * Strict-Transport-Security is left to the TLS-terminating proxy (docs/OPERATIONS.md): triad serves
 * plain HTTP and cannot know the name a browser would pin.
 */
const BASE_DIRECTIVES = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  fontSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  upgradeInsecureRequests: null,
};

const common = {
  hsts: false,
  frameguard: { action: 'deny' as const },
  referrerPolicy: { policy: 'no-referrer' as const },
  crossOriginEmbedderPolicy: false,
};

const strict = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: BASE_DIRECTIVES } });
const docs = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: { ...BASE_DIRECTIVES, styleSrc: ["'self'", "'unsafe-inline'"] } } });

/** Express middleware: the headers above, before any route or static file answers. */
export function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  (req.path === '/docs' || req.path.startsWith('/docs/') ? docs : strict)(req, res, next);
}
