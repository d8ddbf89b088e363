import { InvalidArgumentError, Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../cli-io';
import { CliError, EXIT } from '../exit-codes';
import { int } from '../options';

/** The benchmark suites, in the order `all` runs them; bench/bench-command.ts has one per name. */
export const BENCH_SUITES = ['store', 'turns', 'decisions', 'replay', 'dispatch', 'esdb', 'cache', 'startup', 'sandbox', 'launches', 'scale', 'procs', 'provider', 'sdk'] as const;
export type BenchSuite = (typeof BENCH_SUITES)[number];

export interface BenchOptions {
  runs?: number;
  turns?: number;
  /** The scale suite: the model's latency per call (TRIAD_OFFLINE_LATENCY_MS of its server). */
  latencyMs?: number;
  /** The launches, scale and procs suites: repetitions (their --runs is the number of runs launched). */
  repeat?: number;
  /** The launches, scale and procs suites: launches (runs driven to the gate, for scale; per process, for procs) before the measurement. */
  warmUp?: number;
  /** The procs suite: the numbers of server processes measured, in order. */
  processes?: number[];
  /** The procs suite: launch round-robin over every server (`each`, default) or all on the first (`first`). */
  launchOn?: 'each' | 'first';
  /** The procs suite: --runs for each process, not in all (each process as busy as one alone). */
  perProcess?: boolean;
  /** The provider suite: another build's dist/ measured alternately with this checkout's. */
  vs?: string;
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

/** `--processes 1,2,3`: one to eight counts, each 1 to 16. */
function processCounts(raw: string): number[] {
  const counts = raw.split(',').map((part) => int('--processes', 1, 16)(part.trim()));
  if (counts.length > 8) throw new InvalidArgumentError('--processes takes at most 8 counts');
  return counts;
}

/** `triad bench [suite]`: docs/BENCHMARKS.md. */
export function addBenchCommand(program: Command, load: () => Promise<BenchModule> = loadBenchModule): void {
  program
    .command('bench')
    .description(`run benchmarks: ${BENCH_SUITES.join(', ')} or all (docs/BENCHMARKS.md)`)
    .argument('[suite]', `${BENCH_SUITES.join(' | ')} | all`, 'all')
    .allowUnknownOption(false)
    .addOption(
      new Option('--runs <n>', 'repetitions per scenario (median reported); for launches, scale, procs and provider, the runs launched; for sdk, the calls').argParser(int('--runs', 1, 100_000)),
    )
    .option('--turns <n>', 'turns for the turns/replay/cache suites', int('--turns', 1, 10_000_000))
    .option('--latency-ms <ms>', 'scale, procs, provider: model latency per call (default 1000; procs 500)', int('--latency-ms', 0, 600_000))
    .option('--repeat <n>', 'launches, scale, procs, provider, sdk: repetitions (median reported; default 1, launches 3, sdk 3)', int('--repeat', 1, 100))
    .option('--warm-up <n>', 'launches, scale, procs: launches (scale, procs: runs driven to the gate, per process for procs) before measuring (default launches 5000, others 0)', int('--warm-up', 0, 100_000))
    .option('--processes <list>', 'procs: server process counts, comma-separated (default 1,2,3)', processCounts)
    .addOption(
      new Option('--launch-on <where>', 'procs: launch round-robin on each server, or every run on the first (the others drive nothing)').choices(['each', 'first']),
    )
    .option('--per-process', 'procs: --runs for each process (each as busy as one alone), not in all')
    .option('--vs <dist>', "provider: another build's dist/ directory, measured alternately with this one (A/B)")
    .option('--json', 'print one JSON line per suite')
    .action(async (suite: string, opts: BenchOptions) => {
      const bench = await load();
      process.exitCode = await bench.runBenchCommand(suite, opts);
    });
}
