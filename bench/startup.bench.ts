import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../src/cli/cli-io';
import { machineInfo, type MachineInfo, machineLine, summariseFine, type Summary } from './machine';

/**
 * Start-up (`npm run bench -- startup`): how long a `triad` process takes before it does anything,
 * the program loaded as the bundle `triad` runs (dist/cli/main.js → dist/triad.cjs) and module by
 * module (dist/cli/program.js, what every command loaded before the bundle). Two commands:
 *
 * - `--version`: the program loaded and one command parsed (every verb pays this);
 * - `serve`: the app `triad serve` builds, until it listens (SQLite in a fresh data directory, the
 *   offline model): what a restart, a takeover or a test's server waits for.
 *
 * Each sample is a new Node process; the bundle's compiled-code cache (Node's on 22.8 and later,
 * triad's own on Node 20) starts empty in a folder of the bench's own, so its first sample is a cold
 * start (reported apart) and the rest are warm.
 * Measured in the process itself: its uptime when the command is done (wall, from the process's
 * start) and its CPU (user + system, every thread). Samples of the two ways alternate.
 */

const DIST = join(packageRoot(), 'dist');

type Way = 'bundle' | 'modules';
type Command = 'version' | 'serve';

const ENTRY: Record<Way, string> = { bundle: join(DIST, 'cli', 'main.js'), modules: join(DIST, 'cli', 'program.js') };

const SCRIPT = `
const entry = require(process.env.STARTUP_ENTRY);
const done = () => {
  const cpu = process.cpuUsage();
  process.stderr.write('STARTUP ' + JSON.stringify({ wallMs: process.uptime() * 1000, cpuMs: (cpu.user + cpu.system) / 1000 }) + '\\n');
};
(async () => {
  if (process.env.STARTUP_COMMAND === 'version') {
    await entry.runCli(['--version']);
    done();
    return;
  }
  const app = await entry.createHttpApp({ logger: false });
  await app.listen(0, '127.0.0.1');
  done();
  await app.close();
})().then(() => process.exit(0), (err) => { process.stderr.write(String(err && err.stack || err) + '\\n'); process.exit(1); });
`;

export interface StartupSample {
  wallMs: number;
  cpuMs: number;
}

export interface StartupSide {
  /** The bundle's first sample, with its compiled-code cache empty (null for modules). */
  cold: StartupSample | null;
  wallMs: Summary;
  cpuMs: Summary;
}

export interface StartupBenchResult {
  benchmark: 'startup';
  machine: MachineInfo;
  inputs: { runs: number };
  version: Record<Way, StartupSide>;
  serve: Record<Way, StartupSide>;
}

function sample(way: Way, command: Command, scratch: string, cacheDir: string): Promise<StartupSample> {
  const dataDir = mkdtempSync(join(scratch, `${command}-${way}-`));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    STARTUP_ENTRY: ENTRY[way],
    STARTUP_COMMAND: command,
    TRIAD_DATA_DIR: dataDir,
    TRIAD_STORE: 'sqlite',
    TRIAD_MODEL: 'offline',
    TRIAD_API_KEYS: 'bench:operator:bench-secret-0123456789',
    // The bundle's compiled-code cache is kept under the temporary folder: one of the
    // bench's own, so that it starts empty.
    TMPDIR: cacheDir,
  };
  for (const name of ['TRIAD_PG_URL', 'TRIAD_ESDB_URL', 'ANTHROPIC_API_KEY', 'NODE_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE']) delete env[name];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['-e', SCRIPT], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = stderr.split('\n').find((l) => l.startsWith('STARTUP '));
      if (code !== 0 || !line) reject(new Error(`startup sample (${way}, ${command}) exited ${code}: ${stderr.slice(-400)}`));
      else resolvePromise(JSON.parse(line.slice('STARTUP '.length)) as StartupSample);
    });
  });
}

export async function runStartupBench(options: { runs?: number; dataDir: string; log: (line: string) => void }): Promise<StartupBenchResult> {
  const runs = options.runs ?? 7;
  const { log } = options;
  const machine = machineInfo();
  log(machineLine(machine));
  log(`startup: ${runs} samples of each way (each a new process), alternated; the bundle's first start apart (its compiled-code cache empty)`);
  const result = { benchmark: 'startup' as const, machine, inputs: { runs } } as StartupBenchResult;
  for (const command of ['version', 'serve'] as const) {
    const cacheDir = join(options.dataDir, `cache-${command}`);
    mkdirSync(cacheDir, { recursive: true });
    const samples: Record<Way, StartupSample[]> = { bundle: [], modules: [] };
    // The bundle's first start (its cache empty) apart, then samples of both ways alternated.
    const cold = await sample('bundle', command, options.dataDir, cacheDir);
    for (let i = 0; i < runs; i++) {
      for (const way of ['modules', 'bundle'] as const) samples[way].push(await sample(way, command, options.dataDir, cacheDir));
    }
    const side = (way: Way): StartupSide => ({
      cold: way === 'bundle' ? cold : null,
      wallMs: summariseFine(samples[way].map((s) => s.wallMs)),
      cpuMs: summariseFine(samples[way].map((s) => s.cpuMs)),
    });
    result[command] = { bundle: side('bundle'), modules: side('modules') };
    const row = (label: string, s: StartupSide) => `  ${label.padEnd(22)} wall ms ${fmt(s.wallMs)}   CPU ms ${fmt(s.cpuMs)}`;
    log(`${command === 'version' ? 'triad --version' : 'serve, until it listens'}:`);
    log(row('module by module', result[command].modules));
    log(row('bundle', result[command].bundle));
    log(`  ${'bundle, first start'.padEnd(22)} wall ms ${cold.wallMs.toFixed(0)}   CPU ms ${cold.cpuMs.toFixed(0)}`);
  }
  return result;
}

const fmt = (s: Summary) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
