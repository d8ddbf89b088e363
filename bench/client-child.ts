import { spawn, type ChildProcess } from 'node:child_process';
import { LAUNCH_BODY, OPERATOR_KEY } from './app-server';

/**
 * The provider bench's clients, in a process of their own: the launcher (`POST /v1/runs`, so many
 * in flight) and the `/health` poller (one request at a time, every 20 ms). The bench process also
 * serves the loopback Messages API, thousands of streamed answers at once; a client there would
 * wait on that process's own event loop, and its round trips would count the bench's lag as the
 * server's. The child runs plain JavaScript (jest runs the bench from its TypeScript sources, which
 * a child Node cannot load), so its requests are app-server.ts's `httpCall` and `launchRuns` written
 * again in the script below; keep the two alike.
 */

const CLIENT_SCRIPT = `
const { Agent, request } = require('node:http');
const port = Number(process.env.BENCH_PORT);
const headers = { authorization: 'Bearer ' + process.env.BENCH_OPERATOR_KEY };
function call(agent, method, path, body) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((res, rej) => {
    const req = request({ agent, host: '127.0.0.1', port, method, path, headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (r) => {
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end(payload);
  });
}
let health;
async function launch(runs, concurrency) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  const started = performance.now();
  const launcher = async () => {
    while (next < runs) {
      next++;
      const r = await call(agent, 'POST', '/v1/runs', JSON.parse(process.env.BENCH_LAUNCH_BODY));
      if (r.status !== 202) throw new Error('launch answered ' + r.status + ': ' + r.body);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, runs) }, launcher));
    return { launchMs: performance.now() - started };
  } finally {
    agent.destroy();
  }
}
function startHealth() {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const times = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      await call(agent, 'GET', '/health');
      times.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  health = { stop: async () => { running = false; await loop; agent.destroy(); return times; } };
}
process.on('message', async (m) => {
  try {
    if (m.cmd === 'launch') process.send({ id: m.id, ...(await launch(m.runs, m.concurrency)) });
    else if (m.cmd === 'health') { startHealth(); process.send({ id: m.id }); }
    else if (m.cmd === 'health-stop') process.send({ id: m.id, times: health ? await health.stop() : [] });
  } catch (err) {
    process.send({ id: m.id, error: String((err && err.message) || err) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
`;

export interface BenchClients {
  /** Launches `runs` runs, `concurrency` in flight; each must be answered 202. Resolves with the time they took. */
  launch(runs: number, concurrency: number): Promise<{ launchMs: number }>;
  /** Starts polling `GET /health`. */
  startHealth(): Promise<void>;
  /** Stops polling: the round trips (ms), in order. */
  stopHealth(): Promise<number[]>;
  stop(): Promise<void>;
}

export async function startBenchClients(port: number): Promise<BenchClients> {
  const child: ChildProcess = spawn(process.execPath, ['-e', CLIENT_SCRIPT], {
    env: { ...process.env, BENCH_PORT: String(port), BENCH_OPERATOR_KEY: OPERATOR_KEY, BENCH_LAUNCH_BODY: JSON.stringify(LAUNCH_BODY) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-10_000)));
  let seq = 0;
  const pending = new Map<number, { res: (v: Record<string, unknown>) => void; rej: (e: Error) => void }>();
  await new Promise<void>((ready, fail) => {
    child.on('message', (m: Record<string, unknown>) => {
      if (m.ready) ready();
      else if (typeof m.id === 'number') {
        const ask = pending.get(m.id);
        pending.delete(m.id);
        if (typeof m.error === 'string') ask?.rej(new Error(m.error));
        else ask?.res(m);
      }
    });
    child.once('exit', (code, signal) => {
      const exited = new Error(`the bench's client process exited (${code ?? signal})\n${stderr}`);
      fail(exited);
      for (const ask of pending.values()) ask.rej(exited);
      pending.clear();
    });
  });
  const ask = <T>(msg: Record<string, unknown>) =>
    new Promise<T>((res, rej) => {
      const id = ++seq;
      pending.set(id, { res: res as (v: Record<string, unknown>) => void, rej });
      child.send({ ...msg, id });
    });
  return {
    launch: (runs, concurrency) => ask<{ launchMs: number }>({ cmd: 'launch', runs, concurrency }),
    startHealth: async () => {
      await ask({ cmd: 'health' });
    },
    stopHealth: async () => (await ask<{ times: number[] }>({ cmd: 'health-stop' })).times,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.disconnect();
      await exited;
    },
  };
}
