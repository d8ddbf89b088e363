import fc from 'fast-check';
import { applyPatch } from 'diff';
import { unifiedDiff } from '../../src/session-replay/unified-diff';
import { DIFF_LIMITS, diffBudget, workspaceChanges } from '../../src/session-replay/workspace-diff';

// The review's diffs: exact text for the cases a reviewer reads most, and for any pair of files a
// patch that an independent implementation (the `diff` package's applyPatch) applies to the old
// text to give exactly the new one.

describe('unifiedDiff', () => {
  it('given a file added, then every line is added against /dev/null', () => {
    expect(unifiedDiff('a.txt', undefined, 'A\nB\n')).toBe('--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+A\n+B\n');
  });

  it('given a file removed, then every line is removed', () => {
    expect(unifiedDiff('a.txt', 'A\n', undefined)).toBe('--- a/a.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-A\n');
  });

  it('given one line changed in a long file, then one hunk with three lines of context, the removal first', () => {
    const before = ['1', '2', '3', '4', '5', '6', '7', '8', '9'].join('\n') + '\n';
    const after = before.replace('5\n', 'five\n');
    expect(unifiedDiff('n.txt', before, after)).toBe('--- a/n.txt\n+++ b/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n');
  });

  it('given a last line without a newline, then git\'s marker follows it', () => {
    expect(unifiedDiff('x', 'a', 'b')).toBe('--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n');
  });

  it('given the same text, then nothing', () => {
    expect(unifiedDiff('x', 'a\n', 'a\n')).toBe('');
  });

  it('given any two texts, then the patch turns the old into the new', () => {
    const lines = fc.array(fc.constantFrom('a', 'b', 'c', 'd', ''), { maxLength: 30 });
    const text = fc.tuple(lines, fc.boolean()).map(([ls, nl]) => (ls.length === 0 ? '' : ls.join('\n') + (nl ? '\n' : '')));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const patch = unifiedDiff('f', before, after);
        return patch === '' ? before === after : applyPatch(before, patch) === after;
      }),
      { numRuns: 300 },
    );
  });

  it('given files too large to match line by line, then every old line removed and every new one added, still a patch that applies', () => {
    const before = Array.from({ length: 2100 }, (_, i) => `old ${i}\n`).join('');
    const after = Array.from({ length: 2100 }, (_, i) => `new ${i}\n`).join('');
    const patch = unifiedDiff('big', before, after);
    expect(patch.split('\n').filter((l) => l.startsWith('-old')).length).toBe(2100);
    expect(applyPatch(before, patch)).toBe(after);
  });
});

describe('workspaceChanges', () => {
  const files = (o: Record<string, string>) => Object.entries(o).map(([path, content]) => ({ path, content }));
  it('given files added, changed, removed and kept, then each is named once in path order and only the changes are in the patch', () => {
    const d = workspaceChanges(files({ 'a.txt': 'A2\n', 'c.txt': 'C\n', 'k.txt': 'K\n' }), { iteration: 1, files: files({ 'a.txt': 'A\n', 'b.txt': 'B\n', 'k.txt': 'K\n' }) }, 'previous');
    expect(d.changes).toEqual([
      { path: 'a.txt', change: 'changed' },
      { path: 'b.txt', change: 'removed' },
      { path: 'c.txt', change: 'added' },
    ]);
    expect(d.fromIteration).toBe(1);
    expect(d.patch).not.toContain('k.txt');
    expect(d.patch.split('\n').filter((l) => l.startsWith('--- ') || l.startsWith('+++ '))).toEqual(['--- a/a.txt', '+++ b/a.txt', '--- a/b.txt', '+++ /dev/null', '--- /dev/null', '+++ b/c.txt']);
  });
});

describe("what one answer's diffs may cost (DIFF_LIMITS)", () => {
  const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} line ${i} ${'x'.repeat(40)}\n`).join('');

  it('given a file larger than the limit, then it is listed as changed, not diffed, and the others are', () => {
    const big = 'y'.repeat(DIFF_LIMITS.fileBytes);
    const changes = workspaceChanges(
      [
        { path: 'big.bin.txt', content: `${big}2` },
        { path: 'small.txt', content: 'new\n' },
      ],
      { iteration: 1, files: [{ path: 'big.bin.txt', content: `${big}1` }, { path: 'small.txt', content: 'old\n' }] },
      'previous',
    );
    expect(changes.changes).toEqual([
      { path: 'big.bin.txt', change: 'changed', omitted: `larger than ${DIFF_LIMITS.fileBytes / 1024} KiB to diff` },
      { path: 'small.txt', change: 'changed' },
    ]);
    expect(changes.patch).not.toContain('big.bin.txt');
    expect(changes.patch).toContain('-old\n+new\n');
  });

  it('given more changed text than one answer may hold, then the patch stops at its limit and the rest is listed with why', () => {
    // Twenty files of about 80 KiB each, every line changed: about 3 MiB of patch asked for.
    const before = Array.from({ length: 20 }, (_, k) => ({ path: `f${String(k).padStart(2, '0')}.txt`, content: lines(1800, 'old') }));
    const after = before.map((f) => ({ path: f.path, content: lines(1800, 'new') }));
    const changes = workspaceChanges(after, { iteration: 1, files: before }, 'previous');
    expect(changes.patch.length).toBeLessThanOrEqual(DIFF_LIMITS.patchBytes);
    const diffed = changes.changes.filter((c) => c.omitted === undefined);
    const left = changes.changes.filter((c) => c.omitted !== undefined);
    expect(changes.changes).toHaveLength(20);
    expect(diffed.length).toBeGreaterThan(0);
    expect(left.length).toBeGreaterThan(0);
    for (const c of left) expect(c.omitted).toBe('the diff reached its 1 MiB limit');
    // What is diffed is whole: each listed file's patch applies.
    for (const c of diffed) expect(changes.patch).toContain(`+++ b/${c.path}\n`);
  });

  it('given files whose line tables would pass the shared budget, then the later ones are still correct patches, only as whole replacements', () => {
    const budget = diffBudget();
    budget.cells = 1_000; // as if the answer had spent almost all of it
    const before = 'a\nb\nc\n'.repeat(40);
    const after = 'a\nB\nc\n'.repeat(40);
    const changes = workspaceChanges([{ path: 'x.txt', content: after }], { iteration: 1, files: [{ path: 'x.txt', content: before }] }, 'previous', budget);
    expect(applyPatch(before, changes.patch)).toBe(after);
    // Replaced whole between the common first and last lines: every old line removed, every new one added.
    expect(changes.patch.split('\n').filter((l) => l.startsWith('-') && !l.startsWith('---'))).toHaveLength(118);
    expect(changes.patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'))).toHaveLength(118);
  });
});
