import { existsSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { dirname, extname, join } from 'node:path';
import type * as Program from './program';

/**
 * The program `triad` runs: the bundle `dist/triad.cjs` when this entry is the compiled one and the
 * bundle was built beside it (scripts/bundle-dist.js), else `./program` module by module (jest runs
 * src/ so, and a dist/ emitted without the bundle works the same, only slower to start).
 *
 * The bundle's compiled code is cached by V8 between runs: Node's own module compile cache where
 * Node has one (22.1 and later), else v8-compile-cache (Node 20). Both key it by the file's
 * contents, keep it under the system's temporary folder, and fall back to compiling when the cache
 * cannot be read or written; NODE_DISABLE_COMPILE_CACHE=1 (Node 22+) or DISABLE_V8_COMPILE_CACHE=1
 * (Node 20) turn it off, and so does --enable-source-maps on Node 20.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- which module to load is decided here, at run time */
export function loadProgram(entryFile: string): typeof Program {
  const bundle = join(dirname(entryFile), '..', 'triad.cjs');
  if (extname(entryFile) !== '.js' || !existsSync(bundle)) return require('./program') as typeof Program;
  cacheCompiledCode();
  return require(bundle) as typeof Program;
}

function cacheCompiledCode(): void {
  const enable = (nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache;
  if (typeof enable === 'function') enable();
  // v8-compile-cache compiles outside Node's module loader, which is where source maps are
  // registered: with --enable-source-maps, the bundle is compiled the ordinary way instead.
  else if (!process.sourceMapsEnabled) require('v8-compile-cache');
}
/* eslint-enable @typescript-eslint/no-require-imports */
