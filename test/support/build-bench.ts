import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Compiles bench/ as `npm run bench` does (tsconfig.bench.json, incremental, to build/bench/), for
 * tests of `triad bench`: jest's global setup builds only dist/, which holds no benchmark.
 */
export function buildBench(): void {
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.bench.json'], {
    cwd: resolve(__dirname, '..', '..'),
    stdio: 'inherit',
  });
}
