import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as acorn from 'acorn';
import { tempDir } from '../support/temp-dir';

// triad's own cache of the bundle's compiled code, for a Node without a module compile cache API
// (Node 20): V8's cached data through vm.Script, in the user's private cache folder. Each load is a
// new Node process, as each start of `triad` is. A cache file is replaced (a new inode) only when it
// is written again, so an unchanged inode after a load means V8 took the cache.
const DIST = resolve(__dirname, '..', '..', 'dist');
const LOADER = join(DIST, 'cli', 'load-program.js');
const uid = process.getuid!();

describe("the bundle's compiled-code cache kept by triad", () => {
  const base = tempDir('triad-code-cache-');
  afterAll(() => base.remove());
  let n = 0;
  const cacheDir = join(base.path, `triad-compile-cache-${uid}`);
  const caches = () => readdirSync(cacheDir).filter((f) => f.endsWith('.v8cache')).sort();

  /** A module of `text` in its own file; loading it prints what its answer() returns. */
  const moduleOf = (text: string) => {
    const file = join(base.path, `m${n++}.cjs`);
    writeFileSync(file, text);
    return file;
  };
  const load = (file: string, env: NodeJS.ProcessEnv = {}) => {
    const script = `const m = require(${JSON.stringify(LOADER)}).requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(base.path)}); console.log(m === undefined ? 'not cached' : m.answer());`;
    const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '', NODE_DISABLE_COMPILE_CACHE: '', ...env } });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    return out.stdout.trim();
  };

  it('given no cache, when loaded, then the module runs and its cache is written at exit, readable by this user only; when loaded again, then V8 takes it', () => {
    const file = moduleOf('exports.answer = () => [1, 2, 3].map((x) => x * 2).join(",");');
    expect(load(file)).toBe('2,4,6');
    const [cache] = caches();
    const path = join(cacheDir, cache);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const before = statSync(path).ino;
    expect(load(file)).toBe('2,4,6');
    expect(statSync(path).ino).toBe(before);
  });

  it('given the cache of other code of the same length (V8 checks only the length), when loaded, then the new code runs and has its own cache', () => {
    const file = moduleOf('exports.answer = () => 42;');
    expect(load(file)).toBe('42');
    const first = caches();
    writeFileSync(file, 'exports.answer = () => 43;');
    expect(load(file)).toBe('43');
    expect(caches().length).toBe(first.length + 1);
  });

  it('given a damaged cache, when loaded, then V8 refuses it, the module still runs, and a good cache replaces it', () => {
    const file = moduleOf('exports.answer = () => "still runs";');
    const had = new Set(caches());
    expect(load(file)).toBe('still runs');
    const cache = join(cacheDir, caches().find((c) => !had.has(c))!);
    writeFileSync(cache, Buffer.alloc(4096, 0xa5));
    expect(load(file)).toBe('still runs');
    const rewritten = statSync(cache).ino;
    expect(readFileSync(cache).equals(Buffer.alloc(4096, 0xa5))).toBe(false);
    expect(load(file)).toBe('still runs');
    expect(statSync(cache).ino).toBe(rewritten);
  });

  it('given caching turned off (NODE_DISABLE_COMPILE_CACHE=1) or source maps on, when loaded, then Node loads it its own way', () => {
    const file = moduleOf('exports.answer = () => 1;');
    expect(load(file, { NODE_DISABLE_COMPILE_CACHE: '1' })).toBe('not cached');
    expect(load(file, { NODE_OPTIONS: '--enable-source-maps' })).toBe('not cached');
  });

  it('given as many caches as are kept, when one more is written, then the least recently used is removed, not one in use', () => {
    while (caches().length < 4) load(moduleOf(`exports.answer = () => ${n};`));
    // Their ages set by hand (the test need not wait for the clock): the first listed is the oldest.
    const kept = caches();
    for (const [i, c] of kept.entries()) utimesSync(join(cacheDir, c), 1_000_000 + i, 1_000_000 + i);
    // The oldest is used again: its module loads from it, which marks it used.
    const inUse = moduleOf('exports.answer = () => "in use";');
    const had = new Set(caches());
    expect(load(inUse)).toBe('in use');
    const inUseCache = caches().find((c) => !had.has(c))!;
    utimesSync(join(cacheDir, inUseCache), 999_999, 999_999);
    const [, leastUsed] = caches()
      .map((c) => [statSync(join(cacheDir, c)).mtimeMs, c] as const)
      .sort((a, b) => a[0] - b[0])
      .filter(([, c]) => c !== inUseCache)[0];
    expect(load(inUse)).toBe('in use');

    const file = moduleOf('exports.answer = () => "newest";');
    expect(load(file)).toBe('newest');
    const now = caches();
    expect(now).toHaveLength(4);
    expect(now).toContain(inUseCache);
    expect(now).not.toContain(leastUsed);
  });

  it('given a link or a FIFO in place of the cache, when loaded, then it is never followed or waited on: the module runs as without a cache', () => {
    const file = moduleOf('exports.answer = () => "not fooled";');
    const had = new Set(caches());
    expect(load(file)).toBe('not fooled');
    const cache = join(cacheDir, caches().find((c) => !had.has(c))!);
    rmSync(cache);
    symlinkSync('/dev/zero', cache);
    expect(load(file)).toBe('not fooled');
    rmSync(cache, { force: true });
    execFileSync('mkfifo', [cache]);
    expect(load(file)).toBe('not fooled');
  });
});

/** Where `import(` is called in `code`: the keyword followed by a parenthesis, among the tokens of a full parse (a tokenizer alone can take a regular expression for a division and read on wrongly). */
function importCalls(code: string): number[] {
  const calls: number[] = [];
  let previous: acorn.Token | undefined;
  acorn.parse(code, {
    ecmaVersion: 'latest',
    onToken: (token) => {
      if (previous?.type === acorn.tokTypes._import && token.type === acorn.tokTypes.parenL) calls.push(previous.start);
      previous = token;
    },
  });
  return calls;
}

it('given a built dist/, then the bundle holds no import() (code read back from a cache has no import() loader on Node 20): every dynamic import is a require', () => {
  expect(importCalls(readFileSync(join(DIST, 'triad.cjs'), 'utf8'))).toEqual([]);
});

it('given code with import() in strings, comments and after a regular expression, when read as the bundle is, then only the calls count', () => {
  expect(importCalls('const s = `import(x)`; const t = "import(y)"; // import(z)')).toEqual([]);
  expect(importCalls('f(() => import("node:fs"), `${import(m)}`)')).toHaveLength(2);
  // A tokenizer alone reads this regular expression as a division, then a string that hides the call.
  expect(importCalls('async function f(){for await(const x of y)/"/.test(x);return import("a"),/"/}')).toHaveLength(1);
});
