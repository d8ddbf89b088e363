import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { VERSION } from '@anthropic-ai/sdk/version';
import { startFakeMessagesApi, type FakeMessagesApi } from '../test/support/fake-messages-api';
import { machineInfo, type MachineInfo, machineLine, measureCpuSpeed, summariseFine, type Summary } from './machine';

/**
 * The Anthropic SDK's own cost, apart from triad (`npm run bench -- sdk --runs N`): a client
 * process makes N streamed Messages calls (one answer of text and a tool call, 20 in flight) to the
 * loopback Messages API in the bench process, and measures its own CPU per call, in three ways:
 * - `sdk`: `@anthropic-ai/sdk` as the provider uses it (`messages.create({ stream: true })`, raw
 *   stream events), on Node's global `fetch` (undici);
 * - `sdk-node-http`: the same SDK given a `fetch` over `node:http` with one keep-alive agent
 *   (the SDK's `fetch` option), answered as a web `Response`;
 * - `raw`: the same request over `node:http` and the same body parsed as SSE by a dozen lines,
 *   no SDK (the floor of the HTTP path on this machine).
 * The three run alternately, `--repeat` samples each, because this machine's speed drifts.
 */

export interface SdkBenchOptions {
  /** Calls measured per sample; default 2000. */
  runs?: number;
  /** Samples per way (alternated); default 3. */
  repeat?: number;
  log: (line: string) => void;
}

export const SDK_WAYS = ['sdk', 'sdk-node-http', 'raw'] as const;
export type SdkWay = (typeof SDK_WAYS)[number];

export interface SdkSample {
  way: SdkWay;
  calls: number;
  /** CPU of the client process per call (user + system), µs. */
  cpuUsPerCall: number;
  userUsPerCall: number;
  systemUsPerCall: number;
  wallMs: number;
  cpuProbe: number;
}

export interface SdkBenchResult {
  benchmark: 'sdk';
  startedAt: string;
  durationMs: number;
  machine: MachineInfo & { loadAverage: number[] };
  inputs: { calls: number; warmUpCalls: number; inFlight: number; repeat: number; sdkVersion: string };
  samples: SdkSample[];
  ways: Record<SdkWay, { cpuUsPerCall: Summary }>;
}

const API_KEY = 'sk-ant-bench-sdk-0123456789';
const IN_FLIGHT = 20;

const CLIENT_SCRIPT = `
const http = require('node:http');
const { Readable } = require('node:stream');
const Anthropic = require(process.env.BENCH_SDK).default;
const [way, url, calls, warmUp, inFlight] = [process.env.BENCH_WAY, process.env.BENCH_URL, +process.env.BENCH_CALLS, +process.env.BENCH_WARM_UP, +process.env.BENCH_IN_FLIGHT];
const agent = new http.Agent({ keepAlive: true });
function nodeHttpFetch(input, init = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(input);
    const headers = {};
    new Headers(init.headers).forEach((v, k) => { headers[k] = v; });
    const req = http.request({ agent, hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: init.method || 'GET', headers, signal: init.signal }, (res) => {
      const h = new Headers();
      for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
      resolve(new Response(Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })));
    req.end(init.body);
  });
}
const body = {
  model: 'claude-sonnet-4-6', max_tokens: 1024, stream: true,
  system: [{ type: 'text', text: 'You are the Executor. '.repeat(50), cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Write hello.txt. '.repeat(100) }] }],
  tools: [{ name: 'write_file', description: 'Write a file', input_schema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } } }],
};
const client = new Anthropic({ apiKey: process.env.BENCH_KEY, baseURL: url, maxRetries: 0, logLevel: 'off', ...(way === 'sdk-node-http' ? { fetch: nodeHttpFetch } : {}) });
function raw() {
  const u = new URL(url + '/v1/messages');
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': process.env.BENCH_KEY, 'anthropic-version': '2023-06-01' } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        for (let i; (i = buf.indexOf('\\n\\n')) >= 0; ) {
          const line = buf.slice(0, i).split('\\n').find((l) => l.startsWith('data: '));
          buf = buf.slice(i + 2);
          if (line) JSON.parse(line.slice(6));
        }
      });
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
async function one() {
  if (way === 'raw') return raw();
  const stream = await client.messages.create(body);
  for await (const event of stream) void event;
}
(async () => {
  for (let i = 0; i < warmUp; i++) await one();
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => { while (next++ < calls) await one(); }));
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(JSON.stringify({ user: cpu.user, system: cpu.system, wallMs: performance.now() - t0 }) + '\\n');
  agent.destroy();
})().catch((e) => { process.stderr.write(String((e && e.stack) || e) + '\\n'); process.exit(1); });
`;

function runClient(way: SdkWay, url: string, calls: number, warmUp: number): Promise<{ user: number; system: number; wallMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT_SCRIPT], {
      env: { ...process.env, BENCH_SDK: require.resolve('@anthropic-ai/sdk'), BENCH_WAY: way, BENCH_URL: url, BENCH_KEY: API_KEY, BENCH_CALLS: String(calls), BENCH_WARM_UP: String(warmUp), BENCH_IN_FLIGHT: String(IN_FLIGHT) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString('utf8')).slice(-10_000)));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the ${way} client exited ${code}\n${err}`));
      try {
        resolve(JSON.parse(out) as { user: number; system: number; wallMs: number });
      } catch {
        reject(new Error(`the ${way} client printed no result\n${out}\n${err}`));
      }
    });
  });
}

export async function runSdkBench(options: SdkBenchOptions): Promise<SdkBenchResult> {
  const calls = options.runs ?? 2000;
  const repeat = options.repeat ?? 3;
  const warmUpCalls = Math.min(200, calls);
  const started = Date.now();
  const machine = { ...machineInfo(), loadAverage: loadavg().map((n) => Math.round(n * 100) / 100) };
  const sdkVersion = VERSION;
  options.log(machineLine(machine));
  options.log(`inputs: ${calls} streamed calls per sample (after ${warmUpCalls} to warm up), ${IN_FLIGHT} in flight, @anthropic-ai/sdk ${sdkVersion}, loopback Messages API in the bench process; ${repeat} sample(s) per way, alternated`);
  const api: FakeMessagesApi = await startFakeMessagesApi({
    apiKey: API_KEY,
    promptCache: true,
    record: false,
    fallback: () => ({ kind: 'response', content: [{ type: 'text', text: 'Writing the file.' }, { type: 'tool_use', name: 'write_file', input: { path: 'hello.txt', content: 'Hello\n' } }] }),
  });
  const samples: SdkSample[] = [];
  try {
    for (let r = 0; r < repeat; r++) {
      for (const way of SDK_WAYS) {
        const cpuProbe = measureCpuSpeed();
        const got = await runClient(way, api.url, calls, warmUpCalls);
        const sample: SdkSample = {
          way,
          calls,
          cpuUsPerCall: Math.round((got.user + got.system) / calls),
          userUsPerCall: Math.round(got.user / calls),
          systemUsPerCall: Math.round(got.system / calls),
          wallMs: Math.round(got.wallMs),
          cpuProbe,
        };
        samples.push(sample);
        options.log(`  #${r + 1} ${way}: ${sample.cpuUsPerCall} µs of client CPU per call (user ${sample.userUsPerCall}, system ${sample.systemUsPerCall}); wall ${sample.wallMs} ms; CPU probe ${cpuProbe.toLocaleString('en-US')}/s before it`);
      }
    }
  } finally {
    await api.stop();
  }
  const ways = Object.fromEntries(SDK_WAYS.map((way) => [way, { cpuUsPerCall: summariseFine(samples.filter((s) => s.way === way).map((s) => s.cpuUsPerCall)) }])) as SdkBenchResult['ways'];
  options.log(`medians, µs of client CPU per call: ${SDK_WAYS.map((way) => `${way} ${ways[way].cpuUsPerCall.median}`).join(', ')}`);
  return { benchmark: 'sdk', startedAt: new Date(started).toISOString(), durationMs: Date.now() - started, machine, inputs: { calls, warmUpCalls, inFlight: IN_FLIGHT, repeat, sdkVersion }, samples, ways };
}
