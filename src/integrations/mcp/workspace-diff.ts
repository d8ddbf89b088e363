import type { WorkspaceFile } from '../../session-replay/workspace-history';

/**
 * The changes between two iterations' workspaces, pure: each file added, removed or changed, and a
 * unified diff of the text (three lines of context), as `diff -u` would print it. Files too large
 * to compare line by line are shown as replaced whole.
 */

export type FileChangeKind = 'added' | 'removed' | 'changed';

export interface WorkspaceDiff {
  files: Array<{ path: string; change: FileChangeKind }>;
  unchanged: number;
  diff: string;
}

const CONTEXT = 3;
/** Past this many line pairs, a file is shown as replaced whole rather than compared (the table is n×m). */
const MAX_CELLS = 4_000_000;

type Op = { kind: ' ' | '-' | '+'; line: string };

const linesOf = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));

/** The line edit script from `a` to `b` by longest common subsequence. */
function editScript(a: string[], b: string[]): Op[] {
  if (a.length * b.length > MAX_CELLS) return [...a.map((line) => ({ kind: '-' as const, line })), ...b.map((line) => ({ kind: '+' as const, line }))];
  const width = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * width + j] = a[i] === b[j] ? lcs[(i + 1) * width + j + 1] + 1 : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ kind: ' ', line: a[i++] });
      j++;
      // Deletions before insertions, as diff prints a replaced line.
    } else if (i < a.length && (j === b.length || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])) ops.push({ kind: '-', line: a[i++] });
    else ops.push({ kind: '+', line: b[j++] });
  }
  return ops;
}

/** `@@ -l,s +l,s @@` hunks of the script: changes less than seven lines apart share one, with three lines of context. */
function hunks(ops: Op[]): string[] {
  const changed = ops.flatMap((o, k) => (o.kind === ' ' ? [] : [k]));
  const groups: Array<[number, number]> = [];
  for (const k of changed) {
    const last = groups[groups.length - 1];
    if (last && k - last[1] <= 2 * CONTEXT + 1) last[1] = k;
    else groups.push([k, k]);
  }
  // Line numbers before each op, in the old and the new file.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 1;
  let n = 1;
  for (const op of ops) {
    oldAt.push(o);
    newAt.push(n);
    if (op.kind !== '+') o++;
    if (op.kind !== '-') n++;
  }
  const out: string[] = [];
  for (const [first, last] of groups) {
    const from = Math.max(0, first - CONTEXT);
    const to = Math.min(ops.length, last + 1 + CONTEXT);
    const body = ops.slice(from, to);
    const oldCount = body.filter((op) => op.kind !== '+').length;
    const newCount = body.filter((op) => op.kind !== '-').length;
    // An empty side is numbered by the line before it, as diff -u does.
    out.push(`@@ -${oldCount === 0 ? oldAt[from] - 1 : oldAt[from]},${oldCount} +${newCount === 0 ? newAt[from] - 1 : newAt[from]},${newCount} @@`);
    for (const op of body) out.push(`${op.kind}${op.line}`);
  }
  return out;
}

export function diffWorkspaces(before: readonly WorkspaceFile[], after: readonly WorkspaceFile[]): WorkspaceDiff {
  const old = new Map(before.map((f) => [f.path, f.content]));
  const now = new Map(after.map((f) => [f.path, f.content]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const files: WorkspaceDiff['files'] = [];
  const text: string[] = [];
  let unchanged = 0;
  for (const path of paths) {
    const a = old.get(path);
    const b = now.get(path);
    if (a === b) {
      unchanged++;
      continue;
    }
    const change: FileChangeKind = a === undefined ? 'added' : b === undefined ? 'removed' : 'changed';
    files.push({ path, change });
    text.push(`--- ${a === undefined ? '/dev/null' : `a/${path}`}`, `+++ ${b === undefined ? '/dev/null' : `b/${path}`}`, ...hunks(editScript(linesOf(a ?? ''), linesOf(b ?? ''))));
  }
  return { files, unchanged, diff: text.length === 0 ? '' : `${text.join('\n')}\n` };
}
