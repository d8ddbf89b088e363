import { sseFrame } from '../../src/http/event-stream-sse';

// The one framing of an event stream's messages (docs/API.md "Server-sent events").

describe('sseFrame', () => {
  it('given a stored event, then its revision as the id, its type as the event, its envelope as the data', () => {
    expect(sseFrame({ id: 3, event: 'RunEnded', data: { revision: 3, type: 'RunEnded' } })).toBe('id: 3\nevent: RunEnded\ndata: {"revision":3,"type":"RunEnded"}\n\n');
  });

  it('given live model text, then no id: a reconnect resumes after the last stored event', () => {
    expect(sseFrame({ event: 'delta', data: { role: 'executor', turn: 1, text: 'a\nb' } })).toBe('event: delta\ndata: {"role":"executor","turn":1,"text":"a\\nb"}\n\n');
  });
});
