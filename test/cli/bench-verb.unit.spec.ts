import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BENCH_MODULE, loadBenchModule } from '../../src/cli/commands/bench';
import { tempDir } from '../support/temp-dir';

/** `triad bench` of an installation without the compiled benchmarks (they are never in dist/). */
describe('triad bench without build/bench', () => {
  it('is exit 2 with one line: run `npm run bench` from a source checkout', async () => {
    const dir = tempDir('triad-no-bench-');
    try {
      await expect(loadBenchModule(dir.path)).rejects.toMatchObject({
        name: 'CliError',
        exitCode: 2,
        message: 'benchmarks are not part of this installation; run `npm run bench` from a source checkout',
      });
    } finally {
      dir.remove();
    }
  });

  it('looks for them where tsconfig.bench.json compiles them', () => {
    const tsconfig = JSON.parse(readFileSync(resolve(__dirname, '..', '..', 'tsconfig.bench.json'), 'utf8'));
    expect(BENCH_MODULE).toBe(join(tsconfig.compilerOptions.outDir, 'bench', 'bench-command.js'));
  });
});
