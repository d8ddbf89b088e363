import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { mapError, retryAfter } from '../../../src/team/models/anthropic.provider';
import { ModelError } from '../../../src/team/models/model.port';

// The SDK-error → ModelError table, for cases the fake server cannot easily produce.

const idle = { aborted: false, timedOut: false };
const headers = (h: Record<string, string> = {}) => new Headers(h);
const body = (type: string, message: string) => ({ type: 'error', error: { type, message } });

describe('mapError', () => {
  it.each([
    ['in-stream rate_limit_error', new APIError(undefined, body('rate_limit_error', 'slow'), undefined, headers()), 'rate_limited'],
    ['in-stream invalid_request_error about the context', new APIError(undefined, body('invalid_request_error', 'prompt is too long: 1 > 0'), undefined, headers()), 'context_too_long'],
    ['in-stream unknown type', new APIError(undefined, body('brand_new_error', 'x'), undefined, headers()), 'server'],
    ['400 input + max_tokens over the context window', APIError.generate(400, body('invalid_request_error', 'input length and `max_tokens` exceed context limit: 190000 + 21333 > 200000'), undefined, headers()), 'context_too_long'],
    ['413 request_too_large', APIError.generate(413, body('request_too_large', 'Request exceeds the maximum size'), undefined, headers()), 'context_too_long'],
    ['504 gateway timeout', APIError.generate(504, body('timeout_error', 'timeout'), undefined, headers()), 'timeout'],
    ['502 without a body', APIError.generate(502, undefined, 'Bad gateway', headers()), 'server'],
    ['a 500 that says overloaded_error', APIError.generate(500, body('overloaded_error', 'Overloaded'), undefined, headers()), 'overloaded'],
    ['APIConnectionTimeoutError', new APIConnectionTimeoutError(), 'timeout'],
    ['APIConnectionError', new APIConnectionError({ message: 'Connection error.' }), 'connection'],
    ['APIUserAbortError', new APIUserAbortError(), 'aborted'],
    ['SyntaxError', new SyntaxError('Unexpected token'), 'malformed_response'],
    ['undici terminated', new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) }), 'connection'],
  ])('%s', (_label, error, kind) => {
    expect(mapError(error, idle, 1000).kind).toBe(kind);
  });

  it('reports our own abort and idle timeout over what the SDK threw', () => {
    expect(mapError(new APIUserAbortError(), { aborted: true, timedOut: false }, 1000).kind).toBe('aborted');
    expect(mapError(new APIUserAbortError(), { aborted: false, timedOut: true }, 1000).kind).toBe('timeout');
  });

  it('passes ModelErrors through', () => {
    const error = new ModelError('server', 'x');
    expect(mapError(error, idle, 1000)).toBe(error);
  });

  it('keeps the request id and status', () => {
    const error = mapError(APIError.generate(529, body('overloaded_error', 'Overloaded'), undefined, headers({ 'request-id': 'req_1', 'retry-after': '2' })), idle, 1000);
    expect(error).toMatchObject({ kind: 'overloaded', details: { status: 529, requestId: 'req_1', retryAfterMs: 2000 } });
  });
});

describe('retryAfter', () => {
  it('reads retry-after-ms, retry-after seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfter(headers({ 'retry-after-ms': '250.4' }), now)).toBe(250);
    expect(retryAfter(headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }), now)).toBe(30000);
    expect(retryAfter(headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfter(headers(), now)).toBeUndefined();
    expect(retryAfter(undefined, now)).toBeUndefined();
  });
});
