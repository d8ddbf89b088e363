import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBuiltinTools, type BuiltinToolLimits } from '../../../src/team/tools/builtin-tools';
import type { ToolOutcome } from '../../../src/team/tools/tool.port';
import { contextFor, scratchDir, toolNamed } from './tool-test-support';

describe('built-in file tools', () => {
  let root: ReturnType<typeof scratchDir>;
  let ws: string;
  let outside: string;

  beforeEach(() => {
    root = scratchDir('triad-tools-');
    ws = join(root.path, 'ws');
    outside = join(root.path, 'outside');
    mkdirSync(join(ws, 'src', 'lib'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(ws, 'README.md'), '# Title\nhello world\n');
    writeFileSync(join(ws, 'src', 'main.ts'), 'export const greeting = "hello";\nconsole.log(greeting);\n');
    writeFileSync(join(ws, 'src', 'lib', 'util.ts'), 'export function add(a: number, b: number) {\n  return a + b;\n}\n');
    writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET hello\n');
  });
  afterEach(() => root.remove());

  const run = (name: string, input: Record<string, unknown>, limits: Partial<BuiltinToolLimits> = {}): Promise<ToolOutcome> =>
    toolNamed(createBuiltinTools(limits), name).execute(input, contextFor(ws));

  const expectRefused = (outcome: ToolOutcome, userPath = ''): void => {
    expect(outcome.isError).toBe(true);
    // Messages name the model's path, never the host layout (unless the model spelled it out itself).
    if (!userPath.includes(root.path)) expect(outcome.output).not.toContain(root.path);
    expect(outcome.output).not.toContain('TOP SECRET');
  };

  const outsideUntouched = (): void => {
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET hello\n');
  };

  describe('a workspace directory removed under a live run', () => {
    // Given the run's workspace resolved once and then removed (an operator's rm -rf), when a tool
    // runs, then it says the workspace is gone, not that the path the model named does not exist.
    it.each([
      ['write_file', { path: 'hello.txt', content: 'Hello\n' }],
      ['edit_file', { path: 'README.md', old: 'hello', new: 'bye' }],
      ['read_file', { path: 'README.md' }],
      ['list_files', {}],
      ['search_files', { pattern: 'hello' }],
      ['run_command', { command: 'echo hi > made.txt' }],
    ])('%s', async (name, input) => {
      const context = { ...contextFor(ws), realWorkspace: ws };
      root.remove();
      const outcome = await toolNamed(createBuiltinTools(), name).execute(input, context);
      expect(outcome).toEqual({ isError: true, output: expect.stringContaining("the run's workspace directory no longer exists") });
      expect(existsSync(ws)).toBe(false);
    });
  });

  describe('read_file', () => {
    it('returns the text of a file', async () => {
      await expect(run('read_file', { path: 'src/main.ts' })).resolves.toEqual({
        isError: false,
        output: 'export const greeting = "hello";\nconsole.log(greeting);\n',
        machineText: true,
      });
    });

    it('reads a window of lines with offset and limit and says when the file continues', async () => {
      writeFileSync(join(ws, 'lines.txt'), 'one\ntwo\nthree\nfour\n');
      const window = await run('read_file', { path: 'lines.txt', offset: 2, limit: 2 });
      expect(window.output).toBe('two\nthree\n[showing lines 2-3; the file continues — use offset=4 to read on]');
      await expect(run('read_file', { path: 'lines.txt', offset: 4 })).resolves.toEqual({ isError: false, output: 'four\n', machineText: true });
      const past = await run('read_file', { path: 'lines.txt', offset: 9 });
      expect(past.output).toContain('the file has 4 lines');
    });

    it('caps the output in bytes and says where to continue', async () => {
      writeFileSync(join(ws, 'big.txt'), 'aaaa\nbbbb\ncccc\ndddd\n');
      const capped = await run('read_file', { path: 'big.txt' }, { readFileMaxBytes: 12 });
      expect(capped.isError).toBe(false);
      expect(capped.output).toBe('aaaa\nbbbb\ncc\n[truncated at 12 bytes: line 3 was cut; continue with offset=3]');
      const atBoundary = await run('read_file', { path: 'big.txt' }, { readFileMaxBytes: 10 });
      expect(atBoundary.output).toContain('shown through line 2; continue with offset=3');
    });

    it('does not split a UTF-8 character at the cap', async () => {
      writeFileSync(join(ws, 'utf8.txt'), 'ééééé');
      const capped = await run('read_file', { path: 'utf8.txt' }, { readFileMaxBytes: 5 });
      expect(capped.output.startsWith('éé\n[truncated')).toBe(true);
    });

    it('reports missing files, directories, binary files and empty files clearly', async () => {
      const missing = await run('read_file', { path: 'nope.txt' });
      expect(missing).toEqual({ isError: true, output: '"nope.txt" does not exist' });
      const dir = await run('read_file', { path: 'src' });
      expect(dir.isError).toBe(true);
      expect(dir.output).toContain('is a directory');
      writeFileSync(join(ws, 'blob.bin'), Buffer.from([1, 2, 0, 3]));
      const binary = await run('read_file', { path: 'blob.bin' });
      expect(binary.isError).toBe(true);
      expect(binary.output).toContain('binary');
      writeFileSync(join(ws, 'empty.txt'), '');
      await expect(run('read_file', { path: 'empty.txt' })).resolves.toEqual({ isError: false, output: '(empty file)', machineText: true });
    });

    it('refuses paths that leave the workspace', async () => {
      symlinkSync('/etc', join(ws, 'etc'));
      symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link.txt'));
      symlinkSync(outside, join(ws, 'outdir'));
      for (const path of ['../outside/secret.txt', '/etc/passwd', join(outside, 'secret.txt'), 'etc/passwd', 'secret-link.txt', 'outdir/secret.txt']) {
        expectRefused(await run('read_file', { path }), path);
      }
      expect((await run('read_file', { path: '../outside/secret.txt' })).output).toContain('outside the workspace');
    });
  });

  describe('list_files', () => {
    it('lists a directory sorted, marking directories with /', async () => {
      writeFileSync(join(ws, 'b.txt'), '');
      writeFileSync(join(ws, 'a.txt'), '');
      await expect(run('list_files', {})).resolves.toEqual({ isError: false, output: 'README.md\na.txt\nb.txt\nsrc/' });
      await expect(run('list_files', { path: 'src' })).resolves.toEqual({ isError: false, output: 'src/lib/\nsrc/main.ts' });
    });

    it('walks subdirectories when recursive, without entering .git or following links', async () => {
      mkdirSync(join(ws, '.git', 'objects'), { recursive: true });
      symlinkSync(outside, join(ws, 'outdir'));
      const listing = await run('list_files', { recursive: true });
      expect(listing.output.split('\n')).toEqual(['.git/', 'README.md', 'outdir@', 'src/', 'src/lib/', 'src/lib/util.ts', 'src/main.ts']);
    });

    it('stops after the entry limit and says so', async () => {
      const listing = await run('list_files', { recursive: true }, { listMaxEntries: 3 });
      expect(listing.output.split('\n')).toEqual([
        'README.md',
        'src/',
        'src/lib/',
        '[listing stopped after 3 entries; list a subdirectory to see more]',
      ]);
    });

    it('reports an empty directory, a file and escapes', async () => {
      mkdirSync(join(ws, 'empty'));
      await expect(run('list_files', { path: 'empty' })).resolves.toEqual({ isError: false, output: '("empty" is empty)' });
      expect((await run('list_files', { path: 'README.md' })).isError).toBe(true);
      symlinkSync('/etc', join(ws, 'etc'));
      expectRefused(await run('list_files', { path: 'etc' }));
      expectRefused(await run('list_files', { path: '..' }));
      expectRefused(await run('list_files', { path: '/' }));
    });
  });

  describe('search_files', () => {
    it('finds literal text as file:line: text', async () => {
      const found = await run('search_files', { pattern: 'hello' });
      expect(found).toEqual({ isError: false, output: 'README.md:2: hello world\nsrc/main.ts:1: export const greeting = "hello";' });
    });

    it('treats the pattern literally unless regex is set', async () => {
      expect((await run('search_files', { pattern: 'a + b' })).output).toBe('src/lib/util.ts:2:   return a + b;');
      expect((await run('search_files', { pattern: 'a.+b' })).output).toContain('no matches');
      const regex = await run('search_files', { pattern: '^export (const|function)', regex: true, path: 'src' });
      expect(regex.output).toBe('src/lib/util.ts:1: export function add(a: number, b: number) {\nsrc/main.ts:1: export const greeting = "hello";');
    });

    it('searches one file when path names a file', async () => {
      expect((await run('search_files', { pattern: 'hello', path: 'README.md' })).output).toBe('README.md:2: hello world');
    });

    it('bounds the number of matches', async () => {
      writeFileSync(join(ws, 'many.txt'), 'x\n'.repeat(50));
      const found = await run('search_files', { pattern: 'x', path: 'many.txt' }, { searchMaxMatches: 2 });
      expect(found.output).toBe('many.txt:1: x\nmany.txt:2: x\n[stopped after 2 matches; narrow the pattern or path]');
    });

    it('reports an invalid regex as an error', async () => {
      const bad = await run('search_files', { pattern: '(unclosed', regex: true });
      expect(bad.isError).toBe(true);
      expect(bad.output).toContain('invalid regular expression');
    });

    it('stops a catastrophically backtracking regex instead of hanging', async () => {
      writeFileSync(join(ws, 'evil.txt'), `${'a'.repeat(40)}!\n`);
      const started = Date.now();
      const found = await run('search_files', { pattern: '^(a+)+$', regex: true }, { searchTimeoutMs: 300 });
      expect(found.isError).toBe(true);
      expect(found.output).toContain('search stopped after 300 ms');
      expect(Date.now() - started).toBeLessThan(20_000);
    });

    it('does not search through links or outside the workspace', async () => {
      symlinkSync(outside, join(ws, 'outdir'));
      symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link.txt'));
      const found = await run('search_files', { pattern: 'SECRET' });
      expect(found).toEqual({ isError: false, output: 'no matches for "SECRET" in "."' });
      expectRefused(await run('search_files', { pattern: 'SECRET', path: 'outdir' }));
      expectRefused(await run('search_files', { pattern: 'SECRET', path: '../outside' }));
    });
  });

  describe('write_file', () => {
    it('creates a file and its parent directories, leaving no temp files behind', async () => {
      const written = await run('write_file', { path: 'docs/guide/intro.md', content: 'Intro\n' });
      expect(written).toEqual({ isError: false, output: 'wrote 6 bytes to "docs/guide/intro.md"' });
      expect(readFileSync(join(ws, 'docs', 'guide', 'intro.md'), 'utf8')).toBe('Intro\n');
      expect(readdirSync(join(ws, 'docs', 'guide'))).toEqual(['intro.md']);
    });

    it('replaces an existing file, keeping its mode; writing the same content twice is the same effect', async () => {
      writeFileSync(join(ws, 'run.sh'), 'echo old\n');
      chmodSync(join(ws, 'run.sh'), 0o755);
      await run('write_file', { path: 'run.sh', content: 'echo new\n' });
      await run('write_file', { path: 'run.sh', content: 'echo new\n' });
      expect(readFileSync(join(ws, 'run.sh'), 'utf8')).toBe('echo new\n');
      expect(statSync(join(ws, 'run.sh')).mode & 0o777).toBe(0o755);
      expect(readdirSync(ws).filter((name) => name.startsWith('.triad-'))).toEqual([]);
    });

    it('writes an empty file', async () => {
      await expect(run('write_file', { path: 'empty.txt', content: '' })).resolves.toEqual({
        isError: false,
        output: 'wrote 0 bytes to "empty.txt"',
      });
      expect(readFileSync(join(ws, 'empty.txt'), 'utf8')).toBe('');
    });

    it('refuses to write outside the workspace, through links or escapes, and writes nothing there', async () => {
      symlinkSync(outside, join(ws, 'outdir'));
      symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link.txt'));
      symlinkSync(join(outside, 'new-target.txt'), join(ws, 'dangling.txt'));
      for (const path of [
        '../outside/pwned.txt',
        join(outside, 'pwned.txt'),
        'outdir/pwned.txt',
        'outdir/deep/er/pwned.txt',
        'secret-link.txt',
        'dangling.txt',
        'src/../../outside/pwned.txt',
      ]) {
        expectRefused(await run('write_file', { path, content: 'pwned' }), path);
      }
      outsideUntouched();
    });

    it('writes the target of a link that stays inside the workspace', async () => {
      symlinkSync('README.md', join(ws, 'readme-link'));
      await run('write_file', { path: 'readme-link', content: 'replaced' });
      expect(readFileSync(join(ws, 'README.md'), 'utf8')).toBe('replaced');
    });

    it('reports writing over a directory or the workspace itself as an error', async () => {
      expect((await run('write_file', { path: 'src', content: 'x' })).output).toBe('"src" is a directory');
      expect((await run('write_file', { path: '.', content: 'x' })).isError).toBe(true);
      expect((await run('write_file', { path: 'README.md/child', content: 'x' })).isError).toBe(true);
    });
  });

  describe('edit_file', () => {
    it('replaces a unique occurrence', async () => {
      const edited = await run('edit_file', { path: 'src/main.ts', old: '"hello"', new: '"hi"' });
      expect(edited).toEqual({ isError: false, output: 'replaced 1 occurrence in "src/main.ts"' });
      expect(readFileSync(join(ws, 'src', 'main.ts'), 'utf8')).toBe('export const greeting = "hi";\nconsole.log(greeting);\n');
    });

    it('fails without changing the file when old is missing or ambiguous', async () => {
      const before = readFileSync(join(ws, 'src', 'main.ts'), 'utf8');
      const missing = await run('edit_file', { path: 'src/main.ts', old: 'goodbye', new: 'x' });
      expect(missing.isError).toBe(true);
      expect(missing.output).toContain('old text not found in "src/main.ts"');
      const ambiguous = await run('edit_file', { path: 'src/main.ts', old: 'greeting', new: 'message' });
      expect(ambiguous.isError).toBe(true);
      expect(ambiguous.output).toContain('occurs 2 times');
      expect(readFileSync(join(ws, 'src', 'main.ts'), 'utf8')).toBe(before);
    });

    it('replaces every occurrence with replaceAll, keeping $ sequences literal', async () => {
      const edited = await run('edit_file', { path: 'src/main.ts', old: 'greeting', new: "$&$'", replaceAll: true });
      expect(edited.output).toBe('replaced 2 occurrences in "src/main.ts"');
      expect(readFileSync(join(ws, 'src', 'main.ts'), 'utf8')).toBe('export const $&$\' = "hello";\nconsole.log($&$\');\n');
    });

    it('reports a missing file and refuses links leading outside', async () => {
      expect(await run('edit_file', { path: 'gone.ts', old: 'a', new: 'b' })).toEqual({ isError: true, output: '"gone.ts" does not exist' });
      symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link.txt'));
      expectRefused(await run('edit_file', { path: 'secret-link.txt', old: 'TOP', new: 'PWNED' }));
      expectRefused(await run('edit_file', { path: '../outside/secret.txt', old: 'TOP', new: 'PWNED' }));
      outsideUntouched();
      expect(existsSync(join(ws, 'secret-link.txt'))).toBe(true);
    });
  });
});
