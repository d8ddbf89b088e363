import fc from 'fast-check';
import { applyPatch } from 'diff';
import { unifiedDiff } from '../../src/session-replay/unified-diff';
import { workspaceChanges } from '../../src/session-replay/workspace-diff';

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
