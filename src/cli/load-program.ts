import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants as fsConstants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
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
 * 20, and 22 before 22.8) triad keeps it, through vm.Script's cachedData (requireWithCodeCache):
 * two thirds of a start's CPU. That is sound only because the bundle holds no import(): functions
 * read back from a cache lose the script's import() loader (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING),
 * so the bundler turns every dynamic import into a require (scripts/bundle-dist.js, and a test
 * checks the bundle).
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

/** Cache files kept per folder (one per bundle built, Node version and options): the most recently used. */
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
  const cachedData = readCodeCache(cacheFile);
  const script = new Script(nodeModule.Module.wrap(source), { filename: file, cachedData });
  const compiled = new nodeModule.Module(file, module);
  compiled.filename = file;
  const requireFromFile = nodeModule.createRequire(file);
  compiled.paths = requireFromFile.resolve.paths('triad') ?? [];
  require.cache[file] = compiled;
  try {
    const wrapper = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: NodeJS.Module, filename: string, dirname: string) => void;
    wrapper.call(compiled.exports, compiled.exports, requireFromFile, compiled, file, dirname(file));
  } catch (err) {
    delete require.cache[file];
    throw err;
  }
  compiled.loaded = true;
  if (cachedData === undefined || script.cachedDataRejected === true) process.once('exit', () => writeCodeCache(script, dir, cacheFile));
  else touch(cacheFile);
  return compiled.exports;
}

/** Caches beyond this size are not read: the bundle's is about 3 MB. */
const CODE_CACHE_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The cache file's bytes, or undefined when there is none or it is not a plain file of this user's
 * of a sane size: a link, a FIFO or a device in its place is never followed or waited on.
 */
function readCodeCache(cacheFile: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(cacheFile, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.uid !== process.getuid?.() || stat.size > CODE_CACHE_MAX_BYTES) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** A cache V8 took is marked as used, so that the pruning of old caches keeps it. */
function touch(cacheFile: string): void {
  try {
    const now = new Date();
    utimesSync(cacheFile, now, now);
  } catch {
    // Removed meanwhile by another process's pruning: it is written again at the next start.
  }
}

/** A temporary file older than this was left by a process that died while writing it. */
const STALE_TEMPORARY_MS = 60 * 60 * 1000;

/**
 * Written whole or not at all (a temporary file, named so that no other process, in this or
 * another container sharing the folder, writes the same one, then renamed), readable by this user
 * only. Caches beyond the few most recently used are removed, with temporary files left by a
 * process that died. Best effort: a cache that cannot be written is only a slower next start.
 */
function writeCodeCache(script: Script, dir: string, cacheFile: string): void {
  try {
    const temporary = `${cacheFile}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600, flag: 'wx' });
    renameSync(temporary, cacheFile);
  } catch {
    // A full disk or a folder removed meanwhile: the next start compiles again.
    return;
  }
  try {
    const entries = readdirSync(dir)
      .filter((name) => name.startsWith('triad-'))
      .map((name) => ({ name, path: join(dir, name), mtime: lstatSync(join(dir, name)).mtimeMs }));
    const caches = entries.filter((e) => e.name.endsWith('.v8cache')).sort((a, b) => b.mtime - a.mtime);
    const stale = entries.filter((e) => e.name.endsWith('.tmp') && Date.now() - e.mtime > STALE_TEMPORARY_MS);
    for (const old of [...caches.slice(CODE_CACHES_KEPT), ...stale]) rmSync(old.path, { force: true });
  } catch {
    // Another process pruned first.
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
