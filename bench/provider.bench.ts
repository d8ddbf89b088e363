import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { startFakeMessagesApi, type FakeMessagesApi, type FakeStep, type RecordedRequest } from '../test/support/fake-messages-api';
import { startBenchClients } from './client-child';
import { DEFAULT_DIST, httpCall, LAUNCH_BODY, serverEnv, startServer, waitUntil, waitUntilDriven, type Server } from './app-server';
import { cpuProbeText, machineInfo, type MachineInfo, machineLine, measureCpuSpeed, summariseFine, type Summary } from './machine';

/**
 * The production path (`npm run bench -- provider --runs N --latency-ms L`): N runs launched
 * through the HTTP API of one `triad serve` process (dist/, in a child process) on SQLite, whose
 * model is the real `@anthropic-ai/sdk` talking to a loopback Messages-API server
 * (test/support/fake-messages-api.ts) that waits L ms, then streams its answer (text and tool use),
 * bills prompt caching and answers token counting. Each run is four calls to the review gate:
 * the architect plans, the executor writes a file and submits, the reviewer approves.
 *
 * Measured in the server process: its CPU time per run and per model call, the event loop's lag,
 * the heap and RSS per active run. Measured by the clients, in a process of their own beside the
 * bench's (client-child.ts): launches per second, `GET /health` round trips while the runs are
 * driven; by the bench: wall time against the latency floor. Counted at the
 * loopback server: HTTP requests per model call (messages, token counts, retries).
 *
 * `vs`: another build's dist/ (an older commit's, built in its own worktree). The two builds are
 * measured alternately, A B A B ..., on the same inputs, because this machine's speed changes
 * within minutes: a figure compares only with its neighbours.
 */

export interface ProviderBenchOptions {
  /** Runs launched; default 1000. */
  runs?: number;
  /** The loopback model's latency per call (ms); default 1000. */
  latencyMs?: number;
  /** Samples per build (alternated with `vs`); default 1. */
  repeat?: number;
  /** Launch requests in flight at once; default 50. */
  concurrency?: number;
  /** Another build's dist/ to alternate with this checkout's. */
  vs?: string;
  dataDir: string;
  log: (line: string) => void;
  /** Give up waiting for the runs at the gate after this long; default 10 min. */
  timeoutMs?: number;
}

export interface ProviderSample {
  build: string;
  runs: number;
  timedOut: boolean;
  wallMs: number;
  latencyFloorMs: number;
  wallToFloor: number;
  launchMs: number;
  launchesPerSec: number;
  modelCallsPerRun: number;
  /** HTTP requests the loopback server received per model call, and by kind. */
  requestsPerModelCall: number;
  requests: { messages: number; countTokens: number; modelCalls: number; /** TCP connections they came on. */ connections: number };
  serverCpuMsPerRun: number;
  serverCpuMsPerModelCall: number;
  eventLoopLagMs: { p50: number; p99: number; max: number };
  healthMs: { samples: number; p50: number; p99: number; max: number };
  memory: { peakActive: number; heapPerActiveRunKiB: number; rssPerActiveRunKiB: number };
  cpuProbe: number;
  loadAverage: number[];
}

export interface ProviderBenchResult {
  benchmark: 'provider';
  startedAt: string;
  durationMs: number;
  machine: MachineInfo & { loadAverage: number[] };
  inputs: { runs: number; latencyMs: number; repeat: number; concurrency: number; store: 'sqlite'; builds: string[] };
  samples: ProviderSample[];
  /** Per build, medians over its samples. */
  builds: Record<string, { wallMs: Summary; launchesPerSec: Summary; serverCpuMsPerRun: Summary; healthP99Ms: Summary; lagP99Ms: Summary; heapPerActiveRunKiB: Summary }>;
}

const API_KEY = 'sk-ant-bench-provider';
const round2 = (n: number) => Math.round(n * 100) / 100;
const quantile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);

/** The loopback model: four calls from launch to the review gate, tool use in every answer. */
export function providerScript(request: RecordedRequest): FakeStep {
  const system = JSON.stringify(request.body?.system ?? '');
  if (system.includes('You are the Architect')) {
    return { kind: 'response', content: [{ type: 'text', text: 'Planning the greeting.' }, { type: 'tool_use', name: 'submit_plan', input: { plan: '1. Write hello.txt containing Hello.' } }] };
  }
  if (system.includes('You are the Reviewer')) {
    return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_verdict', input: { verdict: 'APPROVE', findings: [], summary: 'hello.txt says Hello.' } }] };
  }
  const wrote = JSON.stringify(request.body?.messages ?? []).includes('"tool_result"');
  if (wrote) return { kind: 'response', content: [{ type: 'tool_use', name: 'submit_work', input: { summary: 'wrote hello.txt', files: ['hello.txt'] } }] };
  return { kind: 'response', content: [{ type: 'text', text: 'Writing the file.' }, { type: 'tool_use', name: 'write_file', input: { path: 'hello.txt', content: 'Hello\n' } }] };
}

async function serverCpuMs(server: Server): Promise<number> {
  const { cpu } = await server.ask<{ cpu: { user: number; system: number } }>({ cmd: 'cpu' });
  return (cpu.user + cpu.system) / 1000;
}

async function sample(opts: Required<Omit<ProviderBenchOptions, 'vs'>>, build: { name: string; dist: string }, index: number): Promise<ProviderSample> {
  const cpuProbe = measureCpuSpeed();
  const loadAverage = loadavg().map(round2);
  const api: FakeMessagesApi = await startFakeMessagesApi({ apiKey: API_KEY, promptCache: true, latencyMs: opts.latencyMs, record: false, fallback: providerScript });
  const env = serverEnv({
    dataDir: join(opts.dataDir, `${build.name}-${index}`),
    store: 'sqlite',
    latencyMs: 0,
    maxActiveRuns: opts.runs + 1,
    anthropic: { baseUrl: api.url, apiKey: API_KEY },
  });
  const server = await startServer(env, build.dist).catch(async (err: unknown) => {
    await api.stop();
    throw err;
  });
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const clients = await startBenchClients(server.port);
  try {
    // One run through the whole path first: it loads what the first run loads, and names the calls of a run.
    const warm = await httpCall(agent, server.port, 'POST', '/v1/runs', LAUNCH_BODY);
    if (warm.status !== 202) throw new Error(`warm-up launch answered ${warm.status}: ${warm.body}`);
    const warmId = (JSON.parse(warm.body) as { runId: string }).runId;
    // Polled, not `POST /wait`: an older build's wait does not end at the review gate.
    const status = async () => (JSON.parse((await httpCall(agent, server.port, 'GET', `/v1/runs/${warmId}`)).body) as { status?: string }).status;
    if (!(await waitUntil(async () => (await status()) === 'awaiting_review', opts.timeoutMs))) throw new Error(`the warm-up run is ${await status()}, not awaiting_review`);
    await waitUntilDriven([server], 1, opts.timeoutMs, 'the warm-up run');
    const events = (JSON.parse((await httpCall(agent, server.port, 'GET', `/v1/runs/${warmId}/events`)).body) as { events: Array<{ type: string }> }).events;
    const modelCallsPerRun = events.filter((e) => e.type === 'ModelCallStarted').length;

    const base = (await server.ask<{ mem: { heapUsed: number; rss: number } }>({ cmd: 'baseline' })).mem;
    const before = { ...api.received };
    await server.ask({ cmd: 'start', runs: opts.runs });
    const cpuBefore = await serverCpuMs(server);
    await clients.startHealth();
    const started = performance.now();
    const { launchMs } = await clients.launch(opts.runs, opts.concurrency);
    await server.ask({ cmd: 'launched' });
    const allAtGate = await waitUntil(async () => {
      const s = await server.ask<{ active: number; drove: number }>({ cmd: 'status' });
      return s.drove >= opts.runs && s.active === 0;
    }, opts.timeoutMs);
    const wallMs = performance.now() - started;
    const cpuMs = (await serverCpuMs(server)) - cpuBefore;
    const healthTimes = (await clients.stopHealth()).sort((a, b) => a - b);
    const end = await server.ask<{ lag: { p50: number; p99: number; max: number }; atPeak: { active: number; heapUsed: number; rss: number } }>({ cmd: 'stop' });
    const modelCalls = modelCallsPerRun * opts.runs;
    const requests = { messages: api.received.messages - before.messages, countTokens: api.received.countTokens - before.countTokens, modelCalls, connections: api.received.connections - before.connections };
    const latencyFloorMs = modelCallsPerRun * opts.latencyMs;
    const perActive = (bytes: number) => (end.atPeak.active > 0 ? round2(bytes / 1024 / end.atPeak.active) : 0);
    // Recorded delay minus the histogram's 1 ms resolution.
    const lag = (ms: number) => round2(Math.max(0, ms - 1));
    return {
      build: build.name,
      runs: opts.runs,
      timedOut: !allAtGate,
      wallMs: Math.round(wallMs),
      latencyFloorMs,
      wallToFloor: latencyFloorMs > 0 ? round2(wallMs / latencyFloorMs) : 0,
      launchMs: Math.round(launchMs),
      launchesPerSec: Math.round((opts.runs * 1000) / launchMs),
      modelCallsPerRun,
      requestsPerModelCall: modelCalls > 0 ? round2((requests.messages + requests.countTokens) / modelCalls) : 0,
      requests,
      serverCpuMsPerRun: round2(cpuMs / opts.runs),
      serverCpuMsPerModelCall: modelCalls > 0 ? round2(cpuMs / modelCalls) : 0,
      eventLoopLagMs: { p50: lag(end.lag.p50), p99: lag(end.lag.p99), max: lag(end.lag.max) },
      healthMs: { samples: healthTimes.length, p50: round2(quantile(healthTimes, 0.5)), p99: round2(quantile(healthTimes, 0.99)), max: round2(healthTimes[healthTimes.length - 1] ?? 0) },
      memory: { peakActive: end.atPeak.active, heapPerActiveRunKiB: perActive(end.atPeak.heapUsed - base.heapUsed), rssPerActiveRunKiB: perActive(end.atPeak.rss - base.rss) },
      cpuProbe,
      loadAverage,
    };
  } catch (err) {
    throw new Error(`${(err as Error).message}\nserver stderr:\n${server.stderr()}`);
  } finally {
    agent.destroy();
    await clients.stop();
    await server.stop();
    await api.stop();
  }
}

function describe(s: ProviderSample): string {
  return (
    `${s.build}: ${s.timedOut ? 'TIMED OUT; ' : ''}wall ${s.wallMs} ms (floor ${s.latencyFloorMs}, x${s.wallToFloor}); launches ${s.launchesPerSec}/s (${s.launchMs} ms); ` +
    `server CPU ${s.serverCpuMsPerRun} ms/run, ${s.serverCpuMsPerModelCall} ms/model call; ${s.requestsPerModelCall} HTTP requests/model call (${s.requests.messages} messages + ${s.requests.countTokens} count_tokens for ${s.requests.modelCalls} calls, on ${s.requests.connections} connections); ` +
    `lag p50/p99/max ${s.eventLoopLagMs.p50}/${s.eventLoopLagMs.p99}/${s.eventLoopLagMs.max} ms; /health p50/p99 ${s.healthMs.p50}/${s.healthMs.p99} ms (${s.healthMs.samples}); ` +
    `heap ${s.memory.heapPerActiveRunKiB} KiB, rss ${s.memory.rssPerActiveRunKiB} KiB per active run (${s.memory.peakActive} active); load ${s.loadAverage.join(' ')}; ${cpuProbeText(s)} before it`
  );
}

export async function runProviderBench(options: ProviderBenchOptions): Promise<ProviderBenchResult> {
  const opts = {
    ...options,
    runs: options.runs ?? 1000,
    latencyMs: options.latencyMs ?? 1000,
    repeat: options.repeat ?? 1,
    concurrency: options.concurrency ?? 50,
    timeoutMs: options.timeoutMs ?? 600_000,
  };
  const t0 = Date.now();
  const machine = { ...machineInfo(), loadAverage: loadavg().map(round2) };
  const builds = [{ name: 'this', dist: DEFAULT_DIST }, ...(options.vs ? [{ name: 'vs', dist: options.vs }] : [])];
  opts.log(machineLine(machine));
  opts.log(
    `inputs: ${opts.runs} runs, loopback Messages API answering after ${opts.latencyMs} ms (streaming, tool use, prompt caching, token counting), ${opts.concurrency} launches in flight, sqlite; ` +
      `${opts.repeat} sample(s) per build${options.vs ? `, alternated: this (${DEFAULT_DIST}) / vs (${options.vs})` : ''}`,
  );
  const samples: ProviderSample[] = [];
  for (let i = 0; i < opts.repeat; i++) {
    for (const build of builds) {
      const s = await sample(opts, build, i);
      samples.push(s);
      opts.log(`  #${i + 1} ${describe(s)}`);
    }
  }
  const perBuild: ProviderBenchResult['builds'] = {};
  for (const build of builds) {
    const mine = samples.filter((s) => s.build === build.name);
    const sum = (f: (s: ProviderSample) => number) => summariseFine(mine.map(f));
    perBuild[build.name] = {
      wallMs: sum((s) => s.wallMs),
      launchesPerSec: sum((s) => s.launchesPerSec),
      serverCpuMsPerRun: sum((s) => s.serverCpuMsPerRun),
      healthP99Ms: sum((s) => s.healthMs.p99),
      lagP99Ms: sum((s) => s.eventLoopLagMs.p99),
      heapPerActiveRunKiB: sum((s) => s.memory.heapPerActiveRunKiB),
    };
    const b = perBuild[build.name];
    opts.log(
      `${build.name} medians: wall ${b.wallMs.median} ms, launches ${b.launchesPerSec.median}/s, server CPU ${b.serverCpuMsPerRun.median} ms/run, /health p99 ${b.healthP99Ms.median} ms, lag p99 ${b.lagP99Ms.median} ms, heap ${b.heapPerActiveRunKiB.median} KiB/active run`,
    );
  }
  return {
    benchmark: 'provider',
    startedAt: new Date(t0).toISOString(),
    durationMs: Date.now() - t0,
    machine,
    inputs: { runs: opts.runs, latencyMs: opts.latencyMs, repeat: opts.repeat, concurrency: opts.concurrency, store: 'sqlite', builds: builds.map((b) => b.name) },
    samples,
    builds: perBuild,
  };
}
