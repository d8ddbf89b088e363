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
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const path = (req.route as { path?: unknown } | undefined)?.path;
      const route = typeof path === 'string' ? `${req.baseUrl ?? ''}${path}` : 'unmatched';
      observe(req.method, route, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
    };
    res.once('finish', finish);
    res.once('close', finish);
    next();
  };
}
