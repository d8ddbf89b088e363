import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_SUITES, type BenchModule, type BenchOptions, type BenchSuite } from '../src/cli/commands/bench';
import { loadConfig } from '../src/config/config';
import { runCacheBench } from './cache.bench';
import { runDecisionsBench } from './decisions.bench';
import { runDispatchBench } from './dispatch.bench';
import { runLaunchesBench } from './launches.bench';
import { runEsdbBench } from './esdb.bench';
import { runProcsBench } from './procs.bench';
import { runProviderBench } from './provider.bench';
import { runReplayBench } from './replay.bench';
import { runSandboxBench } from './sandbox.bench';
import { runSdkBench } from './sdk.bench';
import { runScaleBench } from './scale.bench';
import { runStartupBench } from './startup.bench';
import { runStoreBench } from './store.bench';
import { runTurnsBench } from './turns.bench';

type Suite = (opts: BenchOptions, log: (line: string) => void, scratch: string, all: boolean) => Promise<unknown>;

/**
 * Benchmark suites by the names `triad bench` declares (src/cli/commands/bench.ts); `all` runs
 * every one. Each prints its machine, inputs and medians.
 */
export const SUITES: Record<BenchSuite, Suite> = {
  store: async (opts, log, scratch) => {
    const config = loadConfig();
    const pgUrl = config.pgUrl ?? process.env.TRIAD_PG_URL;
    return runStoreBench({ runs: opts.runs ?? 5, stores: pgUrl ? ['sqlite', 'postgres'] : ['sqlite'], pgUrl, dataDir: scratch, log });
  },
  turns: async (opts, log, scratch) => {
    const config = loadConfig();
    return runTurnsBench({
      turns: opts.turns,
      runs: opts.runs,
      store: config.store,
      pgUrl: config.pgUrl,
      checkpointEveryTurns: config.checkpointEveryTurns,
      dataDir: scratch,
      log,
    });
  },
  decisions: async (opts, log, scratch) => {
    const config = loadConfig();
    return runDecisionsBench({ runs: opts.runs, pgUrl: config.pgUrl, dataDir: scratch, log });
  },
  replay: async (opts, log, scratch) => runReplayBench({ turns: opts.turns, runs: opts.runs, dataDir: scratch, log }),
  dispatch: async (opts, log, scratch) => runDispatchBench({ runs: opts.runs, dataDir: scratch, log }),
  esdb: async (opts, log) => runEsdbBench({ runs: opts.runs, url: loadConfig().esdbUrl ?? process.env.TRIAD_ESDB_URL, log }),
  cache: async (opts, log) => runCacheBench({ turns: opts.turns, log }),
  startup: async (opts, log, scratch) => runStartupBench({ runs: opts.runs, dataDir: scratch, log }),
  sandbox: async (opts, log, scratch) => runSandboxBench({ runs: opts.runs, dataDir: scratch, log }),
  // Run alone, --runs is the launches measured.
  launches: async (opts, log, scratch, all) => runLaunchesBench({ launches: all ? undefined : opts.runs, warmUp: opts.warmUp, repeat: opts.repeat, dataDir: scratch, log }),
  scale: async (opts, log, scratch, all) => {
    const config = loadConfig();
    // Other suites read --runs as repetitions; run alone, scale reads it as the runs at once.
    return runScaleBench({
      runs: all ? undefined : opts.runs,
      latencyMs: opts.latencyMs,
      repeat: opts.repeat,
      warmUpRuns: opts.warmUp,
      store: config.store === 'postgres' ? 'postgres' : 'sqlite',
      pgUrl: config.pgUrl,
      dataDir: scratch,
      log,
    });
  },
  // One PostgreSQL schema per sample on TRIAD_PG_URL (default: the local test database); in `all`,
  // only when TRIAD_PG_URL is set, at its default size (~3 min).
  procs: async (opts, log, scratch, all) => {
    const pgUrl = loadConfig().pgUrl ?? process.env.TRIAD_PG_URL;
    if (all && !pgUrl) {
      log('procs: skipped (it needs PostgreSQL: set TRIAD_PG_URL)');
      return { skipped: 'no TRIAD_PG_URL' };
    }
    return runProcsBench({
      runs: all ? undefined : opts.runs,
      latencyMs: opts.latencyMs,
      processes: opts.processes,
      repeat: opts.repeat,
      launchOn: opts.launchOn,
      perProcess: opts.perProcess,
      warmUpRuns: opts.warmUp,
      pgUrl,
      dataDir: scratch,
      log,
    });
  },
  // Run alone, --runs is the runs launched; in `all`, 200 runs (the loopback model answers after 1 s).
  provider: async (opts, log, scratch, all) =>
    runProviderBench({ runs: all ? 200 : opts.runs, latencyMs: opts.latencyMs, repeat: opts.repeat, vs: opts.vs, dataDir: scratch, log }),
  // --runs is the calls per sample here too (default 2,000; 1,000 in `all`).
  sdk: async (opts, log, _scratch, all) => runSdkBench({ runs: all ? 1000 : opts.runs, repeat: opts.repeat, log }),
};

const isSuite = (name: string): name is BenchSuite => (BENCH_SUITES as readonly string[]).includes(name);

/** `triad bench <suite>` (and `npm run bench`): the exit code. */
export const runBenchCommand: BenchModule['runBenchCommand'] = async (suite, opts) => {
  const names = suite === 'all' ? [...BENCH_SUITES] : [suite];
  if (!names.every(isSuite)) {
    process.stderr.write(`triad: unknown benchmark suite '${suite}' (suites: ${BENCH_SUITES.join(', ')}, all)\n`);
    return 2;
  }
  // --runs is repetitions (1 to 100) everywhere but in `launches`, `scale`, `procs` and `provider` run alone, where it is the runs launched, and `sdk`, where it is the calls.
  if (!['launches', 'scale', 'procs', 'provider', 'sdk'].includes(suite) && opts.runs !== undefined && opts.runs > 100) {
    process.stderr.write(`triad: --runs must be at most 100 (repetitions) except for the launches, scale, procs, provider and sdk suites\n`);
    return 2;
  }
  for (const name of names) {
    const scratch = mkdtempSync(join(tmpdir(), `triad-bench-${name}-`));
    // With --json, progress goes to stderr so stdout holds only the result line.
    const log = (line: string) => (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
    try {
      const result = await SUITES[name](opts, log, scratch, suite === 'all');
      if (opts.json) process.stdout.write(`${JSON.stringify({ suite: name, ...(result as object) })}\n`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  return 0;
};
