import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { Script } from 'node:vm';
import type * as Program from './program';

/**
 * The program `triad` runs: the bundle `dist/triad.cjs` when this entry is the compiled one and the
 * bundle was built beside it (scripts/bundle-dist.js), else `./program` module by module (jest runs
 * src/ so, and a dist/ emitted without the bundle works the same, only slower to start).
 *
 * V8's compiled code of the bundle is cached between runs in a folder of this user's own
 * (compileCacheDir): compiled code is executed as it is read, so it must sit where no one else can
 * write. Where Node has a module compile cache API (22.8 and later) Node keeps it. Elsewhere (Node
 * 20) triad keeps it, through vm.Script's cachedData (requireWithCodeCache): about half a start's
 * CPU. That is sound only because the bundle holds no import(): functions read back from a cache
 * lose the script's import() loader (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so the bundler turns
 * every dynamic import into a require (scripts/bundle-dist.js, and a test checks the bundle).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- which module to load is decided here, at run time */
export function loadProgram(entryFile: string): typeof Program {
  const bundle = join(dirname(entryFile), '..', 'triad.cjs');
  if (extname(entryFile) !== '.js' || !existsSync(bundle)) return require('./program') as typeof Program;
  if (nodeCachesCompiledCode()) return require(bundle) as typeof Program;
  return (requireWithCodeCache(bundle) ?? require(bundle)) as typeof Program;
}
/* eslint-enable @typescript-eslint/no-require-imports */

/** True when Node has its own module compile cache (turned on here unless the environment chose). */
function nodeCachesCompiledCode(): boolean {
  const enable = (nodeModule as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache;
  if (typeof enable !== 'function') return false;
  // NODE_COMPILE_CACHE names another folder (Node then caches from its own start);
  // NODE_DISABLE_COMPILE_CACHE=1 turns caching off, and Node refuses this call too.
  if (process.env.NODE_COMPILE_CACHE) return true;
  const dir = compileCacheDir();
  if (dir !== undefined) enable(dir);
  return true;
}

/** Cache files kept per folder: one per bundle built and Node version, the newest first. */
const CODE_CACHES_KEPT = 4;

/**
 * `file` (a CommonJS module) compiled with V8's cached data from compileCacheDir(), and the cache
 * written at exit when there was none or V8 refused it (another V8, other flags): written after the
 * program ran, so it holds the functions the run compiled, not only the top level. A cache is named
 * after the SHA-256 of the bundle's text (V8 itself checks only its length), Node's version and the
 * options Node was started with. Undefined, and Node's own loader used, when caching is turned off
 * (NODE_DISABLE_COMPILE_CACHE=1), no private folder can be had, or source maps are on (stack traces
 * are mapped only for modules Node's loader compiled).
 */
export function requireWithCodeCache(file: string, base: string = tmpdir()): unknown {
  const loaded = require.cache[file];
  if (loaded) return loaded.exports;
  if (process.env.NODE_DISABLE_COMPILE_CACHE === '1' || process.sourceMapsEnabled) return undefined;
  const dir = compileCacheDir(base);
  if (dir === undefined) return undefined;
  const source = readFileSync(file, 'utf8');
  const key = createHash('sha256').update(source).update('\0').update([process.version, process.arch, ...process.execArgv, process.env.NODE_OPTIONS ?? ''].join('\0')).digest('hex');
  const cacheFile = join(dir, `triad-${key.slice(0, 40)}.v8cache`);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new Script(nodeModule.Module.wrap(source), { filename: file, cachedData });
  const compiled = new nodeModule.Module(file, module);
  compiled.filename = file;
  compiled.paths = nodeModule.createRequire(file).resolve.paths('triad') ?? [];
  require.cache[file] = compiled;
  try {
    const wrapper = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: NodeJS.Module, filename: string, dirname: string) => void;
    wrapper.call(compiled.exports, compiled.exports, nodeModule.createRequire(file), compiled, file, dirname(file));
  } catch (err) {
    delete require.cache[file];
    throw err;
  }
  compiled.loaded = true;
  if (cachedData === undefined || script.cachedDataRejected === true) process.once('exit', () => writeCodeCache(script, dir, cacheFile));
  return compiled.exports;
}

/** Written whole or not at all (a temporary file renamed), readable by this user only; older caches beyond the few kept removed. Best effort: a cache that cannot be written is only a slower next start. */
function writeCodeCache(script: Script, dir: string, cacheFile: string): void {
  try {
    const temporary = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600 });
    renameSync(temporary, cacheFile);
    const caches = readdirSync(dir)
      .filter((name) => name.startsWith('triad-') && name.endsWith('.v8cache'))
      .map((name) => ({ path: join(dir, name), mtime: statSync(join(dir, name)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime);
    for (const old of caches.slice(CODE_CACHES_KEPT)) rmSync(old.path, { force: true });
  } catch {
    // A full disk or a folder removed meanwhile: the next start compiles again.
  }
}

/**
 * `<tmp>/triad-compile-cache-<uid>`, created private (0700) if missing; undefined (no cache) unless
 * it is a real folder of this user's that no one else can write: a folder another user made first,
 * a symbolic link, or a folder open to others is never used.
 */
export function compileCacheDir(base: string = tmpdir()): string | undefined {
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid === undefined) return undefined;
  const dir = join(base, `triad-compile-cache-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  try {
    const stat = lstatSync(dir);
    return stat.isDirectory() && stat.uid === uid && (stat.mode & 0o077) === 0 ? dir : undefined;
  } catch {
    return undefined;
  }
}
