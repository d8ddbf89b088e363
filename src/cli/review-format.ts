import type { ReviewIteration, ReviewView } from '../review-gate/review-view';
import type { WorkspaceView } from '../session-replay/workspace-view';
import type { WorkspaceChanges } from '../session-replay/workspace-diff';

/**
 * `triad review show` and `triad runs workspace` as text: the review's run, criteria and
 * iterations, and unified diffs — coloured (removed lines red, added green, hunk heads cyan) only
 * when asked, which the commands do on a terminal without NO_COLOR.
 */

const ANSI = { red: '\x1b[31m', green: '\x1b[32m', cyan: '\x1b[36m', bold: '\x1b[1m', reset: '\x1b[0m' } as const;

/** Colour on a terminal, unless NO_COLOR is set to anything (no-color.org). */
export function useColour(stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return stdout.isTTY === true && !(env.NO_COLOR !== undefined && env.NO_COLOR !== '');
}

export function colourPatch(patch: string, colour: boolean): string {
  if (!colour) return patch;
  const paint = (code: string, line: string) => `${code}${line}${ANSI.reset}`;
  return patch
    .split('\n')
    .map((line) => {
      if (line.startsWith('--- ') || line.startsWith('+++ ')) return paint(ANSI.bold, line);
      if (line.startsWith('@@')) return paint(ANSI.cyan, line);
      if (line.startsWith('-')) return paint(ANSI.red, line);
      if (line.startsWith('+')) return paint(ANSI.green, line);
      return line;
    })
    .join('\n');
}

function changesText(diff: WorkspaceChanges, colour: boolean): string[] {
  const since = diff.against === 'start' || diff.fromIteration === undefined ? 'the start' : `iteration ${diff.fromIteration}`;
  if (diff.changes.length === 0) return [`no changes since ${since}`];
  const omitted = diff.changes.filter((c) => c.omitted !== undefined).map((c) => `${c.path} not diffed: ${c.omitted} (compare its sha256)`);
  return [`${diff.changes.length} file(s) changed since ${since}: ${diff.changes.map((c) => `${c.path} (${c.change})`).join(', ')}`, ...omitted, colourPatch(diff.patch, colour).replace(/\n$/, '')];
}

function iterationLines(it: ReviewIteration): string[] {
  const lines = [`iteration ${it.iteration}`];
  const s = it.startedBy;
  if (s.reason === 'changes_requested') lines.push(`  sent back by the reviewer agent at ${s.at}: ${s.findings.join('; ')}`);
  if (s.reason === 'human_rejected') lines.push(`  sent back by ${s.by ?? 'a human'} at ${s.at}: ${s.feedback}`);
  if (it.work) lines.push(`  work      ${it.work.summary}`);
  if (it.verdict) {
    lines.push(`  verdict   ${it.verdict.verdict}: ${it.verdict.summary}`);
    for (const f of it.verdict.findings) lines.push(`  finding   ${f}`);
  }
  for (const d of it.decisions) lines.push(`  decision  ${d.outcome} by ${d.decider} at ${d.at}${d.rework === false ? ' (no rework)' : ''}: ${d.reason}`);
  const changed = it.diff.previous.changes;
  lines.push(`  files     ${changed.length === 0 ? 'none changed' : changed.map((c) => `${c.path} (${c.change})`).join(', ')}`);
  return lines;
}

export function describeReview(v: ReviewView, colour: boolean): string {
  const current = v.iterations.find((i) => i.iteration === v.iteration);
  const earlier = v.iterations.filter((i) => i.iteration < v.iteration);
  const who = v.caller ? (v.caller.mayDecide ? `you (${v.caller.identity}) may decide it` : `you (${v.caller.identity}) may not decide it: ${v.caller.reason}`) : undefined;
  const lines = [
    `review    ${v.reviewId} (${v.state.replace(/_/g, ' ')}), iteration ${v.iteration} of at most ${v.run.maxIterations}`,
    `run       ${v.run.runId} ${v.run.status}${v.run.terminationReason ? ` (${v.run.terminationReason})` : ''}, launched by ${v.run.launchedBy}`,
    `goal      ${v.run.goal}`,
    `executor  ${v.executor}`,
    `deciders  ${v.deciders.roles.join(' or ')}; not ${v.deciders.excluded.map((e) => e.identity).join(', ')}`,
    ...(who ? [`caller    ${who}`] : []),
    '',
    'acceptance criteria',
    ...v.acceptanceCriteria.map((c) => `  - ${c}`),
  ];
  if (earlier.length > 0) lines.push('', 'earlier iterations', ...earlier.flatMap(iterationLines));
  if (current) {
    lines.push('', ...iterationLines(current));
    lines.push('', `diff against ${current.diff.previous.fromIteration === undefined ? 'the start' : `iteration ${current.diff.previous.fromIteration}`}`, ...changesText(current.diff.previous, colour));
    if (current.diff.previous.fromIteration !== undefined && current.diff.start) lines.push('', 'diff against the start', ...changesText(current.diff.start, colour));
  }
  const skipped = Object.entries(v.notReproduced);
  if (skipped.length > 0) lines.push('', `not reproduced (their effects are not recorded): ${skipped.map(([n, k]) => `${n} × ${k}`).join(', ')}`);
  return lines.join('\n');
}

/** The files (path, size, sha256) or, with a diff, the diff. */
export function describeWorkspace(w: WorkspaceView, colour: boolean): string {
  if (w.diff) return [`run ${w.runId}, iteration ${w.iteration}${w.submitted ? '' : ' (not submitted yet)'}`, ...changesText(w.diff, colour)].join('\n');
  const head = `run ${w.runId}, iteration ${w.iteration}${w.submitted ? '' : ' (not submitted yet)'}: ${w.files.length} file(s)`;
  const width = Math.max(0, ...w.files.map((f) => String(f.size).length));
  return [head, ...w.files.map((f) => `${String(f.size).padStart(width)}  ${f.sha256}  ${f.path}`)].join('\n');
}
