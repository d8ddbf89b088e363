import { canonicalJson, sha256Hex } from '../../../shared/canonical-json';
import type { StagnationPolicy } from './policies';

/**
 * Stagnation: an agent repeating the same tool calls without making progress. Pure functions over
 * a sliding window of tool-call fingerprints, folded from the run's ModelCallCompleted events (so
 * replay and a resumed driver see the same window):
 *
 * - repetition ratio: (calls − distinct calls) / calls over the last `windowSize` calls, counted
 *   once the window holds `minCalls` calls;
 * - cycles: the last k tool-bearing turns repeat the k before them (A→B→A→B), for k ≥ 2 and turns
 *   that are not all the same (that is repetition).
 *
 * A fingerprint is `name:sha256(canonical JSON of the input)[:16]`; a turn's signature is its
 * fingerprints sorted, so the order of calls within a turn does not matter.
 */

export interface StagnationWindow {
  /** Fingerprints of the last tool calls, oldest first (at most windowSize). */
  calls: string[];
  /** Signatures of the last tool-bearing turns, oldest first (at most windowSize). */
  turns: string[];
}

export type StagnationDetection =
  | { signal: 'repetition'; ratio: number; calls: number; repeated: Array<{ tool: string; fingerprint: string; count: number }> }
  | { signal: 'cycle'; cycleLength: number; turns: number; cycle: string[] };

export function toolFingerprint(name: string, input: unknown): string {
  return `${name}:${sha256Hex(canonicalJson(input ?? {})).slice(0, 16)}`;
}

/** The window after one more tool-bearing turn (calls in the model's order). */
export function recordTurn(window: StagnationWindow, calls: Array<{ name: string; input: unknown }>, windowSize: number): StagnationWindow {
  if (calls.length === 0) return window;
  const fingerprints = calls.map((c) => toolFingerprint(c.name, c.input));
  const keep = Math.max(1, windowSize);
  return {
    calls: [...window.calls, ...fingerprints].slice(-keep),
    turns: [...window.turns, [...fingerprints].sort().join(' + ')].slice(-keep),
  };
}

export function repetitionRatio(calls: readonly string[]): number {
  if (calls.length === 0) return 0;
  return (calls.length - new Set(calls).size) / calls.length;
}

/** The shortest cycle the last turns repeat, if any. */
export function detectCycle(turns: readonly string[]): { length: number; cycle: string[] } | undefined {
  for (let k = 2; k * 2 <= turns.length; k++) {
    const last = turns.slice(-k);
    const before = turns.slice(-2 * k, -k);
    if (new Set(last).size < 2) continue;
    if (last.every((t, i) => t === before[i])) return { length: k, cycle: last };
  }
  return undefined;
}

export function detectStagnation(window: StagnationWindow, policy: StagnationPolicy): StagnationDetection | undefined {
  if (!policy.enabled) return undefined;
  const calls = window.calls.slice(-policy.windowSize);
  if (calls.length >= policy.minCalls) {
    const ratio = repetitionRatio(calls);
    if (ratio >= policy.repetitionThreshold) {
      const counts = new Map<string, number>();
      for (const c of calls) counts.set(c, (counts.get(c) ?? 0) + 1);
      const repeated = [...counts.entries()]
        .filter(([, n]) => n > 1)
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .map(([fingerprint, count]) => ({ tool: fingerprint.slice(0, fingerprint.lastIndexOf(':')), fingerprint, count }));
      return { signal: 'repetition', ratio: Math.round(ratio * 1000) / 1000, calls: calls.length, repeated };
    }
  }
  if (policy.cycleDetection) {
    const turns = window.turns.slice(-policy.windowSize);
    const cycle = detectCycle(turns);
    if (cycle) return { signal: 'cycle', cycleLength: cycle.length, turns: turns.length, cycle: cycle.cycle };
  }
  return undefined;
}

/** In words, for messages to the agent and the run's end. */
export function describeDetection(d: StagnationDetection): string {
  if (d.signal === 'repetition') {
    const top = d.repeated
      .slice(0, 3)
      .map((r) => `${r.tool} ×${r.count}`)
      .join(', ');
    return `${Math.round(d.ratio * 100)}% of the last ${d.calls} tool calls repeat earlier ones with the same input (${top})`;
  }
  const names = d.cycle.map((t) => t.replace(/:[0-9a-f]{16}/g, '')).join(' → ');
  return `the last ${d.cycleLength * 2} turns repeat a cycle of ${d.cycleLength} (${names} → ${names})`;
}

/** The corrective user message sent to the agent on its next turn. */
export function correctiveMessage(d: StagnationDetection, submitTool: string): string {
  return (
    `You seem to be stuck: ${describeDetection(d)}. Repeating the same calls will not give different results. ` +
    `Step back: use what the earlier results told you, try a different approach, or, if the work is done or cannot be done, ` +
    `call ${submitTool} now. If you keep repeating, the run will be stopped for stagnation.`
  );
}

// ---------------------------------------------------------------------------------------------
// Team level: the reviewer asks for the same changes again

/** Findings compared as a set: case, spacing and trailing punctuation do not matter. */
export function normaliseFindings(findings: readonly string[]): string[] {
  const norm = findings.map((f) => f.toLowerCase().replace(/\s+/g, ' ').trim().replace(/[\s.;:!,]+$/, '')).filter((f) => f.length > 0);
  return [...new Set(norm)].sort();
}

export function sameFindings(a: readonly string[], b: readonly string[]): boolean {
  const x = normaliseFindings(a);
  const y = normaliseFindings(b);
  return x.length > 0 && x.length === y.length && x.every((f, i) => f === y[i]);
}
