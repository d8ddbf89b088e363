import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { addBenchCommand, BENCH_MODULE, loadBenchModule, type BenchOptions } from '../../src/cli/commands/bench';
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

/** `triad bench ...` parsed as the CLI parses it; the options the benchmark would get, or the usage error. */
async function parse(...args: string[]): Promise<{ suite: string; opts: BenchOptions }> {
  const errors: string[] = [];
  const program = new Command().exitOverride().configureOutput({ writeErr: (s) => errors.push(s), writeOut: () => undefined });
  let got: { suite: string; opts: BenchOptions } | undefined;
  addBenchCommand(program, async () => ({ runBenchCommand: async (suite, opts) => ((got = { suite, opts }), 0) }));
  try {
    await program.parseAsync(['node', 'triad', 'bench', ...args]);
  } catch (err) {
    throw new Error(errors.join('') || (err as Error).message);
  }
  return got!;
}

/** `triad bench procs --processes 1,2,3`: the process counts reach the benchmark as numbers; anything else is a usage error. */
describe('triad bench --processes', () => {
  it('passes the counts in order', async () => {
    await expect(parse('procs', '--processes', '1, 2,3', '--runs', '300')).resolves.toEqual({ suite: 'procs', opts: { processes: [1, 2, 3], runs: 300 } });
  });

  it.each([['0'], ['1,x'], ['17'], ['1,,2'], ['1,2,3,4,5,6,7,8,9']])('refuses --processes %s', async (raw) => {
    await expect(parse('procs', '--processes', raw)).rejects.toThrow(/--processes/);
  });

  it('takes --launch-on first or each, and nothing else', async () => {
    await expect(parse('procs', '--processes', '1,2', '--launch-on', 'first')).resolves.toEqual({ suite: 'procs', opts: { processes: [1, 2], launchOn: 'first' } });
    await expect(parse('procs', '--launch-on', 'nowhere')).rejects.toThrow(/--launch-on/);
  });
});

/** `triad bench launches|scale --warm-up N`: the warm-up reaches the benchmark as a number; anything else is a usage error. */
describe('triad bench --warm-up', () => {
  it('passes the count, zero included (no warm-up)', async () => {
    await expect(parse('scale', '--runs', '1000', '--warm-up', '1000')).resolves.toEqual({ suite: 'scale', opts: { runs: 1000, warmUp: 1000 } });
    await expect(parse('launches', '--warm-up', '0')).resolves.toEqual({ suite: 'launches', opts: { warmUp: 0 } });
  });

  it.each([['-1'], ['x'], ['1e3'], ['100001']])('refuses --warm-up %s', async (raw) => {
    await expect(parse('launches', '--warm-up', raw)).rejects.toThrow(/--warm-up/);
  });
});
