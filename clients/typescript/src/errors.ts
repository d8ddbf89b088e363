/** triad's error answers as thrown by the client: the status and the `{statusCode, error, message}` body. */

export interface ApiErrorBody {
  statusCode: number;
  error: string;
  message: string | string[];
}

/** An answer of triad that is not a success: `status` says which (400 bad input, 401, 403, 404, 409…). */
export class TriadApiError extends Error {
  override readonly name = 'TriadApiError';

  constructor(
    readonly status: number,
    readonly body: ApiErrorBody | undefined,
    what: string,
  ) {
    const message = body ? (Array.isArray(body.message) ? body.message.join('; ') : body.message) : `HTTP ${status}`;
    super(`${what}: ${status} ${message}`);
  }
}

/** A body that reads as triad's error body, or undefined. */
export function errorBody(value: unknown): ApiErrorBody | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Partial<ApiErrorBody>;
  return typeof v.statusCode === 'number' && typeof v.error === 'string' && (typeof v.message === 'string' || Array.isArray(v.message)) ? (v as ApiErrorBody) : undefined;
}
