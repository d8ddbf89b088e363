import { Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../cli-io';
import { CliError, EXIT } from '../exit-codes';
import { int } from '../options';

/** The benchmark suites, in the order `all` runs them; bench/bench-command.ts has one per name. */
export const BENCH_SUITES = ['store', 'turns', 'decisions', 'replay', 'dispatch', 'esdb', 'cache', 'scale'] as const;
export type BenchSuite = (typeof BENCH_SUITES)[number];

export interface BenchOptions {
  runs?: number;
  turns?: number;
  /** The scale suite: the model's latency per call (TRIAD_OFFLINE_LATENCY_MS of its server). */
  latencyMs?: number;
  /** The scale suite: repetitions (its --runs is the number of runs at once). */
  repeat?: number;
  json?: boolean;
}

/** What the compiled bench/bench-command.ts exports to this command. */
export interface BenchModule {
  runBenchCommand(suite: string, opts: BenchOptions): Promise<number>;
}

/**
 * Where `npm run bench` compiles the benchmarks (tsconfig.bench.json), relative to the package:
 * they are not part of dist/, so an installed program has none.
 */
export const BENCH_MODULE = join('build', 'bench', 'bench', 'bench-command.js');

export const NO_BENCHMARKS = 'benchmarks are not part of this installation; run `npm run bench` from a source checkout';

/** The compiled benchmarks of the checkout this program runs from; exit 2 where there are none. */
export async function loadBenchModule(root: string = packageRoot()): Promise<BenchModule> {
  const file = join(root, BENCH_MODULE);
  if (!existsSync(file)) throw new CliError(NO_BENCHMARKS, EXIT.usage);
  return (await import(file)) as BenchModule;
}

/** `triad bench [suite]`: docs/BENCHMARKS.md. */
export function addBenchCommand(program: Command, load: () => Promise<BenchModule> = loadBenchModule): void {
  program
    .command('bench')
    .description(`run benchmarks: ${BENCH_SUITES.join(', ')} or all (docs/BENCHMARKS.md)`)
    .argument('[suite]', `${BENCH_SUITES.join(' | ')} | all`, 'all')
    .allowUnknownOption(false)
    .addOption(
      new Option('--runs <n>', 'repetitions per scenario (median reported); for scale, the runs launched at once').argParser(int('--runs', 1, 100_000)),
    )
    .option('--turns <n>', 'turns for the turns/replay/cache suites', int('--turns', 1, 10_000_000))
    .option('--latency-ms <ms>', 'scale: model latency per call (default 1000)', int('--latency-ms', 0, 600_000))
    .option('--repeat <n>', 'scale: repetitions (median reported; default 1)', int('--repeat', 1, 100))
    .option('--json', 'print one JSON line per suite')
    .action(async (suite: string, opts: BenchOptions) => {
      const bench = await load();
      process.exitCode = await bench.runBenchCommand(suite, opts);
    });
}
