import { ModelError } from './model.port';

/**
 * What the HTTP model adapters (anthropic.provider.ts, openai.provider.ts) share when they narrow a
 * failure to the port's ModelError: the server's retry-after, the shapes of an abort and of a dead
 * connection under an SDK, and keeping the key out of every message.
 */

export function malformed(message: string): ModelError {
  return new ModelError('malformed_response', `malformed model response: ${message}`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `retry-after-ms` (ms) wins over `retry-after` (seconds or an HTTP date), as the SDKs read them. */
export function retryAfter(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.round(Number(ms));
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  if (Number.isFinite(Number(after))) return Number(after) >= 0 ? Math.round(Number(after) * 1000) : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}

const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ENOTFOUND', 'EAI_AGAIN']);

/** undici fails a body read with `TypeError: terminated` whose cause carries the socket error. */
export function isNetworkError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    if (e instanceof TypeError && /terminated|fetch failed|socket/i.test(e.message)) return true;
  }
  return false;
}

export function describeCause(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof Error && e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ') || 'unknown error';
}

export function redact(text: string, secret: string): string {
  return secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
}

/** Words a server uses when a prompt does not fit the model's context window. */
export const CONTEXT_TOO_LONG = /prompt is too long|prompt too long|context.{0,20}(length|window|limit)|exceeds? .{0,40}context|too many (input )?tokens|maximum context/i;

/** A deep copy with every object's keys in code-unit order (a resumed run sends the bytes a live one sends). */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortedKeys((value as Record<string, unknown>)[key]);
  return out;
}

/**
 * One streamed call's end, for both HTTP adapters: one controller aborts the HTTP request for the
 * caller's signal and for the idle timeout (no byte from the server for `idleMs`), which `touch()`
 * restarts as data arrives; `throwIfCut()` says why a stream the SDK ended quietly was cut short.
 */
export class StreamDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private cutByIdle = false;
  private readonly onCallerAbort = () => this.controller.abort();

  constructor(
    private readonly caller: AbortSignal | undefined,
    private readonly idleMs: number,
  ) {
    caller?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the idle timeout cut the call. */
  get timedOut(): boolean {
    return this.cutByIdle;
  }

  /** The request went out, or data came in: the idle clock starts again. */
  touch(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.cutByIdle = true;
      this.controller.abort();
    }, this.idleMs);
  }

  /** After the stream ended: the SDK ends iteration quietly when the request is aborted; tell why it ended. */
  throwIfCut(): void {
    if (this.caller?.aborted) throw new ModelError('aborted', 'model request aborted');
    if (this.cutByIdle) throw new ModelError('timeout', `no data from the model for ${this.idleMs} ms`);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}
