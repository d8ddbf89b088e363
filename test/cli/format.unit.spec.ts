import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { describeEvent } from '../../src/cli/format';

const recorded = (type: string, data: unknown): RecordedEvent =>
  ({ id: 'e1', streamId: 'run-r1', revision: 1, position: 2, type, data, metadata: {}, recordedAt: '2026-11-24T00:00:00.000Z' }) as unknown as RecordedEvent;

describe('describeEvent: a line of `triad run --follow` per event', () => {
  it('given a DriverClaimed, then it names the process that drives the run (a takeover shows as a second one)', () => {
    expect(describeEvent(recorded('DriverClaimed', { owner: 'proc:host:4242', at: '2026-11-24T00:00:00.000Z' }))).toBe('driver    proc:host:4242 drives the run');
  });

  it('given a ModelCallCompleted, then it shows the tokens, the prompt cache when it was used, and the cost', () => {
    const call = (usage: Record<string, number>) =>
      describeEvent(recorded('ModelCallCompleted', { role: 'executor', turn: 2, model: 'claude-sonnet-4-6', content: [{ type: 'text', text: 'done' }], usage, costUsd: 0.0017 }));
    expect(call({ inputTokens: 50, outputTokens: 30, cacheReadTokens: 1000, cacheWriteTokens: 200 })).toBe(
      'turn      executor #2 claude-sonnet-4-6: done [in 50 / out 30 tokens, cache 1000 read + 200 written, $0.0017]',
    );
    expect(call({ inputTokens: 50, outputTokens: 30 })).toBe('turn      executor #2 claude-sonnet-4-6: done [in 50 / out 30 tokens, $0.0017]');
  });
});
