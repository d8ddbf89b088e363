/**
 * Server-Sent Events read from a response body: the frames of the `text/event-stream` format
 * (WHATWG HTML, "Server-sent events"), as triad sends them — `id:`, `event:`, `data:` lines, a
 * blank line after each message, `:` comment lines to keep the connection alive. No imports:
 * it runs wherever fetch does.
 */

/** One message of the stream: `event` is `message` when the frame names none. */
export interface SseFrame {
  id?: string;
  event: string;
  data: string;
}

/** Parses one frame's lines; undefined for a frame of comments only (a heartbeat). */
function parseFrame(lines: string[]): SseFrame | undefined {
  const frame: SseFrame = { event: 'message', data: '' };
  const data: string[] = [];
  let fields = 0;
  for (const line of lines) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    fields++;
    if (field === 'id') frame.id = value;
    else if (field === 'event') frame.event = value;
    else if (field === 'data') data.push(value);
  }
  if (fields === 0) return undefined;
  frame.data = data.join('\n');
  return frame;
}

/** The frames of a stream of bytes, as they arrive; ends when the stream does. */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  // A \r ending a chunk may be the first half of a \r\n: kept until the next chunk says.
  let carriageReturn = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      let text: string = (carriageReturn ? '\r' : '') + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      carriageReturn = !done && text.endsWith('\r');
      if (carriageReturn) text = text.slice(0, -1);
      // Lines end in \n, \r\n or \r; a blank line ends a frame.
      buffer += text.replace(/\r\n?/g, '\n');
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const frame = parseFrame(buffer.slice(0, end).split('\n'));
        buffer = buffer.slice(end + 2);
        if (frame) yield frame;
      }
      if (done) return;
    }
  } finally {
    // The caller stopped early (break) or the stream failed: let the connection go.
    await reader.cancel().catch(() => undefined);
  }
}
