import type { NextFunction, Request, Response } from 'express';

/**
 * Express middleware counting each request once it is answered (or its connection closed), by
 * method, the route pattern that handled it (`/v1/runs/:id`, never the raw URL: ids would make a
 * series per run) and status. Requests no route took (404, or refused before routing) count as
 * `unmatched`.
 */
export function httpMetrics(observe: (method: string, route: string, status: number, seconds: number) => void) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // 'close' comes once per response: after 'finish' when it was answered, or alone when its
    // connection went first.
    res.once('close', () => {
      const path = (req.route as { path?: unknown } | undefined)?.path;
      const route = typeof path === 'string' ? `${req.baseUrl ?? ''}${path}` : 'unmatched';
      observe(req.method, route, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}
