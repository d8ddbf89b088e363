import type { DecisionLogVerification } from './decision-log';

/** `triad decisions verify` for people: what was proven, or the first thing that is wrong. */
export function describeVerification(result: DecisionLogVerification): string {
  const lines: string[] = [];
  const bad = result.firstBadRecord;
  if (bad) {
    lines.push(`decision log NOT intact: record ${bad.seq} (decision ${bad.decisionId ?? 'unknown'}) ${bad.problem}: ${bad.detail}`);
    lines.push(`${result.checked} record(s) before it verified`);
  } else {
    lines.push(`decision log chain intact: ${result.checked} record(s) verified against the event store`);
  }
  for (const gap of result.streamGaps ?? []) {
    lines.push(`stream ${gap.streamId} is missing revision ${gap.missingRevision} (found ${gap.foundRevision} in its place): an event was deleted`);
  }
  const since = result.since;
  if (since) {
    lines.push(
      since.extends
        ? `the log extends ${since.hash} (record ${since.seq}); head is now record ${since.head.seq} ${since.head.hash}`
        : `the log does NOT extend ${since.hash}: ${since.detail ?? 'unknown'}; head is now record ${since.head.seq} ${since.head.hash}`,
    );
  }
  if (result.ok && !bad) lines[0] = `decision log intact: ${result.checked} record(s) verified against the event store`;
  return lines.join('\n');
}
