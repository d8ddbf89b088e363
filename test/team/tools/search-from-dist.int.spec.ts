import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { contextFor, scratchDir, toolNamed } from './tool-test-support';

/**
 * search_files as the compiled program runs it: the modules of dist/ (built by jest's
 * globalSetup), whose search thread loads dist's compiled search.worker.js by path. The other
 * tools tests run the sources, where the worker's TypeScript is transpiled in memory instead.
 */

// The compiled program must not need the TypeScript compiler (a development dependency).
jest.mock('typescript', () => {
  throw new Error('the compiled program loaded typescript');
});

const DIST_BUILTIN = resolve(__dirname, '..', '..', '..', 'dist', 'team', 'tools', 'builtin');

type BuiltinToolsModule = typeof import('../../../src/team/tools/builtin-tools');
type WorkerScriptModule = typeof import('../../../src/team/tools/builtin/worker-script');

describe('search_files from the compiled program', () => {
  let root: ReturnType<typeof scratchDir>;

  beforeEach(() => {
    root = scratchDir('triad-search-dist-');
    mkdirSync(join(root.path, 'src'));
    writeFileSync(join(root.path, 'README.md'), '# Title\nhello world\n');
    writeFileSync(join(root.path, 'src', 'main.ts'), 'export const greeting = "hello";\n');
  });
  afterEach(() => root.remove());

  it('starts the compiled worker file by path', async () => {
    const { workerScript } = (await import(join(DIST_BUILTIN, 'worker-script.js'))) as WorkerScriptModule;
    const script = await workerScript(join(DIST_BUILTIN, 'search-files.js'), 'search.worker');
    expect(script).toEqual({ script: join(DIST_BUILTIN, 'search.worker.js'), eval: false });
    expect(existsSync(script.script)).toBe(true);
  });

  it('finds text, and stops a runaway regex at the timeout', async () => {
    const { createBuiltinTools } = (await import(join(DIST_BUILTIN, '..', 'builtin-tools.js'))) as BuiltinToolsModule;
    // A generous limit for the plain search (a loaded machine starts threads slowly), a short one for the runaway.
    const search = toolNamed(createBuiltinTools({ searchTimeoutMs: 60_000 }), 'search_files');
    const quick = toolNamed(createBuiltinTools({ searchTimeoutMs: 300 }), 'search_files');

    const found = await search.execute({ pattern: 'hello' }, contextFor(root.path));
    expect(found).toEqual({ isError: false, output: 'README.md:2: hello world\nsrc/main.ts:1: export const greeting = "hello";' });

    writeFileSync(join(root.path, 'evil.txt'), `${'a'.repeat(40)}!\n`);
    const stopped = await quick.execute({ pattern: '^(a+)+$', regex: true }, contextFor(root.path));
    expect(stopped).toEqual({ isError: true, output: 'search stopped after 300 ms; try a simpler pattern or a narrower path' });
  });
});
