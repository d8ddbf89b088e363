import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { isStoreUnavailable } from '../events/errors';
import { DurabilityError } from '../events/wal-sync';
import { DomainError, type DomainErrorKind } from '../shared/errors';

/** Every expected failure of the domain, by kind, to its HTTP status; anything else is a 500 with no detail. */
export const HTTP_STATUS_OF_KIND: Readonly<Record<DomainErrorKind, number>> = {
  invalid: HttpStatus.BAD_REQUEST,
  not_found: HttpStatus.NOT_FOUND,
  conflict: HttpStatus.CONFLICT,
  forbidden: HttpStatus.FORBIDDEN,
  unavailable: HttpStatus.SERVICE_UNAVAILABLE,
};

const REASON: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Every error leaves as JSON `{statusCode, error, message}`. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const { statusCode, message } = this.describe(exception);
    if (res.headersSent) {
      res.end();
      return;
    }
    // Set here, not left to json(): a route's own content type (metrics' text/plain) is already on the response.
    res.status(statusCode).type('application/json').json({ statusCode, error: REASON[statusCode] ?? 'Error', message });
  }

  private describe(exception: unknown): { statusCode: number; message: string | string[] } {
    if (exception instanceof HttpException) {
      const body = exception.getResponse();
      const message = typeof body === 'string' ? body : ((body as { message?: string | string[] }).message ?? exception.message);
      return { statusCode: exception.getStatus(), message };
    }
    // The store did not answer: the client may retry; the driver's message stays in the log.
    if (isStoreUnavailable(exception)) {
      this.logger.warn(`store unavailable: ${(exception as Error).message}`);
      return { statusCode: 503, message: 'the event store is not reachable; try again' };
    }
    // The store refuses writes until a restart (a failed fdatasync, its file deleted or replaced):
    // no retry helps, and the reason is the operator's (the log, and /health).
    if (exception instanceof DurabilityError) {
      this.logger.error(exception.message);
      return { statusCode: 503, message: 'the event store refuses writes until triad is restarted' };
    }
    if (exception instanceof DomainError) return { statusCode: HTTP_STATUS_OF_KIND[exception.kind], message: exception.message };
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return { statusCode: 500, message: 'internal error' };
  }
}
