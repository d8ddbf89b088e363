import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before any route sees them (bytes that are not HTTP, a header
 * with control characters, both Content-Length and Transfer-Encoding, headers too large, a request
 * that takes too long to arrive) get the same JSON error body as every other refusal, instead of
 * Node's bare status line. The connection is closed after it: the parser cannot find where the
 * next request would start.
 */
export function answerClientErrorsAsJson(server: Server, timedOut: () => void = () => undefined): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way on this connection (an event stream, a long body) cannot be
    // followed by another: the connection is closed, as Node's own handler does.
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === 'ECONNRESET' || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    const [statusCode, error, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', "the request's headers are too large"]
        : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? [413, 'Payload Too Large', "the request's chunk extensions are too large"]
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? [408, 'Request Timeout', 'the request took too long to arrive']
            : [400, 'Bad Request', 'the request is not valid HTTP'];
    if (statusCode === 408) timedOut();
    const body = JSON.stringify({ statusCode, error, message });
    socket.end(
      `HTTP/1.1 ${statusCode} ${error}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
