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
  const a = result.attestations;
  if (a) {
    for (const i of a.issues.slice(0, 20)) lines.push(`${i.type} ${i.id} at position ${i.position}: ${i.of === 'person' ? "the decider's own signature: " : ''}${i.problem}`);
    if (a.issues.length > 20) lines.push(`… and ${a.issues.length - 20} more (--json lists them)`);
    lines.push(
      `${a.checked} attested event(s) checked, ${a.personallySigned} decision(s) signed by their decider` +
        (a.beforeSigning > 0 ? `; ${a.beforeSigning} unsigned from before this store's signing began (position ${a.signingSince ?? 0})` : ''),
    );
  }
  if (result.ok && !bad) lines[0] = `decision log intact: ${result.checked} record(s) verified against the event store${a ? ', every attestation holds' : ''}`;
  return lines.join('\n');
}
