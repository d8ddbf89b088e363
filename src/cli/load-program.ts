import { existsSync, lstatSync, mkdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import type * as Program from './program';

/**
 * The program `triad` runs: the bundle `dist/triad.cjs` when this entry is the compiled one and the
 * bundle was built beside it (scripts/bundle-dist.js), else `./program` module by module (jest runs
 * src/ so, and a dist/ emitted without the bundle works the same, only slower to start).
 *
 * Where Node has a module compile cache API (22.8 and later), V8's compiled code of the bundle is
 * cached between runs in a folder of this user's own (compileCacheDir). Node 20 compiles the bundle
 * at every start: a cache of compiled code is executed as it is read, so it must sit where no one
 * else can write, and be checked before it is used; the library that did this for Node 20 kept it in
 * a shared, predictable folder and trusted what it found there. Caching it by hand (vm.Script's
 * cachedData) fails on Node 20: functions deserialised from a cache lose the script's import()
 * loader (import() throws ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING, and NestJS calls it as every app
 * starts), and the one loader Node 20 takes without a flag prints an experimental warning.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- which module to load is decided here, at run time */
export function loadProgram(entryFile: string): typeof Program {
  const bundle = join(dirname(entryFile), '..', 'triad.cjs');
  if (extname(entryFile) !== '.js' || !existsSync(bundle)) return require('./program') as typeof Program;
  cacheCompiledCode();
  return require(bundle) as typeof Program;
}
/* eslint-enable @typescript-eslint/no-require-imports */

function cacheCompiledCode(): void {
  const enable = (nodeModule as { enableCompileCache?: (dir?: string) => unknown }).enableCompileCache;
  if (typeof enable !== 'function') return;
  // NODE_COMPILE_CACHE names another folder (Node then caches from its own start);
  // NODE_DISABLE_COMPILE_CACHE=1 turns caching off, and Node refuses this call too.
  if (process.env.NODE_COMPILE_CACHE) return;
  const dir = compileCacheDir();
  if (dir !== undefined) enable(dir);
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
