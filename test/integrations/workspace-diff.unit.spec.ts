import { diffWorkspaces } from '../../src/integrations/mcp/workspace-diff';

// The workspace diff the MCP tool answers: files added, removed and changed, as `diff -u` prints them.

const file = (path: string, content: string) => ({ path, content });

describe('diffWorkspaces', () => {
  it('names each file added, removed or changed, and counts the rest', () => {
    const d = diffWorkspaces([file('a.txt', 'A\n'), file('b.txt', 'B\n'), file('same.txt', 's\n')], [file('a.txt', 'A2\n'), file('c.txt', 'C\n'), file('same.txt', 's\n')]);
    expect(d.files).toEqual([
      { path: 'a.txt', change: 'changed' },
      { path: 'b.txt', change: 'removed' },
      { path: 'c.txt', change: 'added' },
    ]);
    expect(d.unchanged).toBe(1);
    expect(d.diff).toBe(['--- a/a.txt', '+++ b/a.txt', '@@ -1,1 +1,1 @@', '-A', '+A2', '--- a/b.txt', '+++ /dev/null', '@@ -1,1 +0,0 @@', '-B', '--- /dev/null', '+++ b/c.txt', '@@ -0,0 +1,1 @@', '+C', ''].join('\n'));
  });

  it('keeps three lines of context and splits changes far apart into hunks', () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
    const after = before.map((l, i) => (i === 1 || i === 17 ? `${l} changed` : l));
    const d = diffWorkspaces([file('f', `${before.join('\n')}\n`)], [file('f', `${after.join('\n')}\n`)]);
    const lines = d.diff.split('\n');
    expect(lines.filter((l) => l.startsWith('@@'))).toEqual(['@@ -1,5 +1,5 @@', '@@ -15,6 +15,6 @@']);
    expect(lines).toContain('-line 2');
    expect(lines).toContain('+line 2 changed');
    expect(lines).toContain('+line 18 changed');
    expect(lines).not.toContain(' line 10');
  });

  it('says nothing when nothing changed', () => {
    expect(diffWorkspaces([file('a', 'x')], [file('a', 'x')])).toEqual({ files: [], unchanged: 1, diff: '' });
  });
});
