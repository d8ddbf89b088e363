/**
 * A unified diff of one text file, as `diff -u` and git print it (`--- a/path`, `+++ b/path`,
 * `@@ -l,n +l,n @@` hunks with three lines of context; `/dev/null` for a file added or removed).
 * Pure. Lines are matched by their longest common subsequence, over line numbers (each distinct
 * line interned once, so a long line costs its hashing, not a comparison per table cell); a file
 * pair too large for that table (more than MAX_CELLS line pairs, or more than the caller's budget
 * has left) is shown as every old line removed and every new one added, which is still a correct
 * patch, only not the smallest. The budget bounds the work of one answer over all its files.
 */

const CONTEXT = 3;
const MAX_CELLS = 4_000_000;

/** Table cells one answer may still spend on matching lines (shared by its files; spent as they are diffed). */
export interface DiffBudget {
  cells: number;
}

type Op = { kind: ' ' | '-' | '+'; line: string; oldNo: number; newNo: number };

/** `before` undefined: the file is added; `after` undefined: removed. Empty when nothing changed. */
export function unifiedDiff(path: string, before: string | undefined, after: string | undefined, budget: DiffBudget = { cells: MAX_CELLS }): string {
  if (before === after) return '';
  const ops = lineOps(linesOf(before ?? ''), linesOf(after ?? ''), budget);
  const hunks = hunksOf(ops);
  if (hunks.length === 0) return '';
  const header = [`--- ${before === undefined ? '/dev/null' : `a/${path}`}`, `+++ ${after === undefined ? '/dev/null' : `b/${path}`}`];
  // A line keeps its newline, so a last line without one differs from the same text with one; git's marker follows it.
  const body = hunks.flatMap((h) => [h.head, ...h.ops.flatMap((op) => (op.line.endsWith('\n') ? [`${op.kind}${op.line.slice(0, -1)}`] : [`${op.kind}${op.line}`, '\\ No newline at end of file']))]);
  return `${[...header, ...body].join('\n')}\n`;
}

/** The lines of `text`, each with its newline (the last one without, when the text has none). */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** The edit script turning `a` into `b`, in order. */
function lineOps(a: string[], b: string[], budget: DiffBudget): Op[] {
  const ops: Op[] = [];
  // Common head and tail first: most edits touch a few lines of a file, so the table stays small.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  for (let i = 0; i < start; i++) ops.push({ kind: ' ', line: a[i], oldNo: i + 1, newNo: i + 1 });
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  for (const op of middleOps(midA, midB, budget)) ops.push({ ...op, oldNo: op.oldNo + start, newNo: op.newNo + start });
  for (let i = 0; i < a.length - endA; i++) ops.push({ kind: ' ', line: a[endA + i], oldNo: endA + i + 1, newNo: endB + i + 1 });
  return ops;
}

function middleOps(a: string[], b: string[], budget: DiffBudget): Op[] {
  const ops: Op[] = [];
  const cells = (a.length + 1) * (b.length + 1);
  if (cells > MAX_CELLS || cells > budget.cells) {
    a.forEach((line, i) => ops.push({ kind: '-', line, oldNo: i + 1, newNo: 0 }));
    b.forEach((line, j) => ops.push({ kind: '+', line, oldNo: a.length, newNo: j + 1 }));
    return ops;
  }
  budget.cells -= cells;
  // Each distinct line as a number: the table compares numbers, whatever the lines' length.
  const ids = new Map<string, number>();
  const idOf = (line: string) => ids.get(line) ?? (ids.set(line, ids.size), ids.size - 1);
  const ia = Int32Array.from(a, idOf);
  const ib = Int32Array.from(b, idOf);
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const width = b.length + 1;
  const lcs = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * width + j] = ia[i] === ib[j] ? lcs[(i + 1) * width + j + 1] + 1 : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && ia[i] === ib[j]) {
      ops.push({ kind: ' ', line: a[i], oldNo: i + 1, newNo: j + 1 });
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i * width + j + 1] >= lcs[(i + 1) * width + j])) {
      ops.push({ kind: '+', line: b[j], oldNo: i, newNo: j + 1 });
      j++;
    } else {
      ops.push({ kind: '-', line: a[i], oldNo: i + 1, newNo: j });
      i++;
    }
  }
  // Removals before additions within a run of changes, as diff -u prints them.
  return regroup(ops);
}

function regroup(ops: Op[]): Op[] {
  const out: Op[] = [];
  let removed: Op[] = [];
  let added: Op[] = [];
  const flush = () => {
    out.push(...removed, ...added);
    removed = [];
    added = [];
  };
  for (const op of ops) {
    if (op.kind === '-') removed.push(op);
    else if (op.kind === '+') added.push(op);
    else {
      flush();
      out.push(op);
    }
  }
  flush();
  return out;
}

interface Hunk {
  head: string;
  ops: Op[];
}

function hunksOf(ops: Op[]): Hunk[] {
  const changed = ops.map((op, i) => (op.kind === ' ' ? -1 : i)).filter((i) => i >= 0);
  const hunks: Hunk[] = [];
  let k = 0;
  while (k < changed.length) {
    const from = Math.max(0, changed[k] - CONTEXT);
    let to = Math.min(ops.length - 1, changed[k] + CONTEXT);
    while (k + 1 < changed.length && changed[k + 1] - CONTEXT <= to + 1) {
      k++;
      to = Math.min(ops.length - 1, changed[k] + CONTEXT);
    }
    k++;
    const slice = ops.slice(from, to + 1);
    const oldLines = slice.filter((o) => o.kind !== '+');
    const newLines = slice.filter((o) => o.kind !== '-');
    const oldStart = oldLines.length > 0 ? oldLines[0].oldNo : (slice[0]?.oldNo ?? 0);
    const newStart = newLines.length > 0 ? newLines[0].newNo : (slice[0]?.newNo ?? 0);
    hunks.push({ head: `@@ -${oldStart},${oldLines.length} +${newStart},${newLines.length} @@`, ops: slice });
  }
  return hunks;
}
