import { executionSegments, runSegments } from '../../../src/team/domain/resilience/tool-dispatch';

// Execution segments of the three-pass dispatch: read-only runs together, anything else alone,
// in the model's order.

const calls = (spec: string) => spec.split('').map((c, i) => ({ id: `${c}${i}`, readOnly: c === 'r' }));
const ids = (segments: Array<Array<{ id: string }>>) => segments.map((s) => s.map((c) => c.id));

describe('execution segments', () => {
  it('given only read-only calls, then they form one concurrent segment', () => {
    expect(ids(executionSegments(calls('rrrr'), (c) => c.readOnly))).toEqual([['r0', 'r1', 'r2', 'r3']]);
  });

  it('given a write between reads, then the reads around it stay on their side of it', () => {
    expect(ids(executionSegments(calls('rrwrrw'), (c) => c.readOnly))).toEqual([['r0', 'r1'], ['w2'], ['r3', 'r4'], ['w5']]);
  });

  it('given writes only, then each runs alone', () => {
    expect(ids(executionSegments(calls('ww'), (c) => c.readOnly))).toEqual([['w0'], ['w1']]);
  });

  it('in serial mode every call is a segment of its own', () => {
    expect(ids(executionSegments(calls('rrw'), (c) => c.readOnly, 'serial'))).toEqual([['r0'], ['r1'], ['w2']]);
  });

  it('runs segments in order and the calls of a segment together; beforeSegment runs first', async () => {
    const log: string[] = [];
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await runSegments(
      executionSegments(calls('rrwr'), (c) => c.readOnly),
      async (c) => {
        log.push(`start ${c.id}`);
        await sleep(c.id === 'r0' ? 30 : 5);
        log.push(`end ${c.id}`);
      },
      { beforeSegment: async (s) => void log.push(`before ${s.map((c) => c.id).join(',')}`) },
    );
    expect(log).toEqual([
      'before r0,r1', 'start r0', 'start r1', 'end r1', 'end r0',
      'before w2', 'start w2', 'end w2',
      'before r3', 'start r3', 'end r3',
    ]); // prettier-ignore
  });

  it('stops before the next segment once stopped, and rethrows a call failure after the segment settled', async () => {
    let stopped = false;
    const ran: string[] = [];
    await runSegments(executionSegments(calls('wr'), (c) => c.readOnly), async (c) => {
      ran.push(c.id);
      stopped = true;
    }, { stopped: () => stopped });
    expect(ran).toEqual(['w0']);

    const settled: string[] = [];
    await expect(
      runSegments([calls('rr')], async (c) => {
        if (c.id === 'r0') throw new Error('bug');
        await new Promise((r) => setTimeout(r, 10));
        settled.push(c.id);
      }),
    ).rejects.toThrow('bug');
    expect(settled).toEqual(['r1']);
  });
});
