import { sseFrames, type SseFrame } from '../../clients/typescript/src/sse';
import { sseFrame } from '../../src/http/event-stream-sse';

// The typed client's reading of Server-Sent Events, against the server's own framing.

/** A body that delivers these chunks, and says whether the reader let it go. */
function body(chunks: string[]): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  const encoder = new TextEncoder();
  let cancelled = false;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
      else controller.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

async function all(chunks: string[]): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  for await (const frame of sseFrames(body(chunks).stream)) frames.push(frame);
  return frames;
}

describe('sseFrames', () => {
  it("reads the server's frames, stored events with their id and live ones without", async () => {
    const wire = sseFrame({ id: 0, event: 'RunLaunched', data: { revision: 0 } }) + ': keep-alive\n\n' + sseFrame({ event: 'delta', data: { role: 'executor', turn: 1, text: 'Hel' } });
    expect(await all([wire])).toEqual([
      { id: '0', event: 'RunLaunched', data: '{"revision":0}' },
      { event: 'delta', data: '{"role":"executor","turn":1,"text":"Hel"}' },
    ]);
  });

  it('whatever the chunks: split inside a line, a CRLF, or a multi-byte character', async () => {
    const wire = sseFrame({ id: 7, event: 'WorkSubmitted', data: { summary: 'héllo ✓' } });
    const bytes = new TextEncoder().encode(wire.replace(/\n/g, '\r\n'));
    const decoder = new TextDecoder();
    // One byte at a time: every boundary is somewhere a chunk ends, the \r of a \r\n and a character's bytes included.
    const chunks = [...bytes].map((b) => decoder.decode(new Uint8Array([b]), { stream: true }));
    expect(await all(chunks.filter((c) => c !== ''))).toEqual([{ id: '7', event: 'WorkSubmitted', data: '{"summary":"héllo ✓"}' }]);
    expect(await all(['id: 1\r', '\nevent: A\rdata: x\r\r'])).toEqual([{ id: '1', event: 'A', data: 'x' }]);
  });

  it('joins data lines, names a frame without event `message`, and drops a frame the stream cut off', async () => {
    expect(await all(['data: a\ndata: b\n\n', 'event: X\ndata: never ended'])).toEqual([{ event: 'message', data: 'a\nb' }]);
  });

  it('lets the stream go when the reader stops early', async () => {
    const { stream, cancelled } = body([sseFrame({ id: 0, event: 'A', data: {} }), sseFrame({ id: 1, event: 'B', data: {} })]);
    for await (const frame of sseFrames(stream)) {
      expect(frame.event).toBe('A');
      break;
    }
    expect(cancelled()).toBe(true);
  });
});
