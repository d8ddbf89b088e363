import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/** Where `npm run build` puts the web console (Vite's output, next to the compiled server). */
export const CONSOLE_DIR = resolve(__dirname, '..', 'console');

/**
 * `GET /` and its assets: the web console, served before the API's routes (which it never
 * shadows: it holds only index.html and assets/). Only `/`, `/index.html` and `/assets/…` reach the
 * file system: static files served from the root would stat a file for every other GET (each
 * `/health`, each read of the API): a sixth of the CPU of a `/health`. Without a
 * build, `/` says how to make one.
 */
export function serveConsole(app: NestExpressApplication, dir: string = CONSOLE_DIR): void {
  if (!existsSync(join(dir, 'index.html'))) {
    app.use('/', (req: Request, res: Response, next: NextFunction) => {
      if (req.method !== 'GET' || req.path !== '/') return next();
      res.status(404).json({ statusCode: 404, error: 'Not Found', message: 'the web console is not built: run npm run build' });
    });
    return;
  }
  // Hashed asset names never change; index.html must be read again to find new ones. Its security
  // headers are every answer's (security-headers.ts).
  app.useStaticAssets(join(dir, 'assets'), { prefix: '/assets/', index: false, setHeaders: (res) => res.setHeader('Cache-Control', 'public, max-age=31536000, immutable') });
  const index = join(dir, 'index.html');
  app.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || (req.path !== '/' && req.path !== '/index.html')) return next();
    // Gone since the start (a rebuild under a running server): answered as any unknown path.
    res.sendFile(index, { headers: { 'Cache-Control': 'no-cache' } }, (err) => (err && !res.headersSent ? next() : undefined));
  });
}
