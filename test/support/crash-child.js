// A triad process for the crash, takeover and shutdown tests: the real AppModule (store, leases,
// checkpoints, supervisor, recovery) built with @nestjs/testing so that the model can be replaced,
// run from dist/ by plain Node (jest's module runtime cannot load NestJS's ES modules). The tests
// start it bundled with everything it imports (build/test/crash-child.cjs, made by jest's
// globalSetup, started by crash-child-start.js): the crash tests start it dozens of times, and
// resolving and compiling dist/ and NestJS module by module cost each start most of its CPU.
//
// The model is the stateless offline model behind a random latency. Every call is logged (and
// fsynced) to CRASH_CALLS_LOG *before* it is made, so a call cut short by kill -9 is still counted.
// Every event a local driver appends is logged to CRASH_EVENTS_LOG with this process's owner id,
// so the test can tell which process wrote what.
//
// Env (besides the TRIAD_* configuration):
//   CRASH_MODE          worker (default): drive runs; http: also serve the API on an ephemeral port
//   CRASH_LAUNCH        JSON array of launch requests to submit at start (driven here)
//   CRASH_PROJECTS      JSON array of project launch requests to submit at start (the project reactor runs here)
//   CRASH_RECOVERY      0 to leave RecoveryService stopped (default: started)
//   CRASH_LATENCY_MS    "min-max" model latency (default 5-30)
//   CRASH_ROLE_LATENCY_MS "role=min-max,...": another latency for these roles
//   CRASH_SLOW_MODELS   "model=ms,...": the first call of a run naming one of these models takes that long
//   CRASH_PAUSE_AFTER   n: a run's calls after its n-th in this process never answer (until aborted),
//                       so that its runs are certainly still in progress, lease held, when it is killed
//   CRASH_CALLS_LOG     file: one JSON line per model call
//   CRASH_EVENTS_LOG    file: one JSON line per event appended by a local driver
// TRIAD_MAX_ACTIVE_RUNS applies as in `triad serve` (launches beyond it are placed elsewhere).
// Stdout: one JSON line {ready, owner, pid, launched, projects, port?}. SIGTERM closes the app (runs in
// flight are suspended) and exits 0.
'use strict';
require('reflect-metadata');
const fs = require('node:fs');

const { Test } = require('@nestjs/testing');
const { CommandBus } = require('@nestjs/cqrs');
const { AppModule } = require('../../dist/app.module.js');
const { MODEL_PROVIDER, ModelError } = require('../../dist/team/models/model.port.js');
const { OfflineModelProvider } = require('../../dist/team/models/offline.model.js');
const { RecoveryService } = require('../../dist/team/dispatch/recovery.service.js');
const { RunDispatcher } = require('../../dist/team/dispatch/run-dispatch.js');
const { RunSupervisor } = require('../../dist/team/dispatch/run-supervisor.js');
const { LiveRunBus } = require('../../dist/team/live/live-run-bus.js');
const { LaunchRunCommand } = require('../../dist/team/commands/launch-run.command.js');
const { ProjectsService } = require('../../dist/projects/projects.service.js');
const { VALIDATION_PIPE } = require('../../dist/http/bootstrap.js');
const { ErrorFilter } = require('../../dist/http/error.filter.js');

const [minLatency, maxLatency] = (process.env.CRASH_LATENCY_MS || '5-30').split('-').map(Number);
const roleLatency = new Map(
  (process.env.CRASH_ROLE_LATENCY_MS || '')
    .split(',')
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1).split('-').map(Number)]),
);
const slowModels = new Map(
  (process.env.CRASH_SLOW_MODELS || '')
    .split(',')
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.lastIndexOf('=')), Number(pair.slice(pair.lastIndexOf('=') + 1))]),
);

function appendLine(file, value, sync) {
  if (!file) return;
  const fd = fs.openSync(file, 'a');
  try {
    fs.writeSync(fd, `${JSON.stringify(value)}\n`);
    if (sync) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The offline model (stateless: a pure function of the request) behind a random latency. */
class SlowOfflineModel {
  constructor() {
    this.name = 'offline';
    this.inner = new OfflineModelProvider();
    this.slowed = new Set();
    this.callsPerRun = new Map();
  }

  async complete(request) {
    appendLine(
      process.env.CRASH_CALLS_LOG,
      { pid: process.pid, runId: request.runId, role: request.role, model: request.model, messages: request.messages.length, subAgent: request.subAgent && request.subAgent.path, t: Date.now() },
      true,
    );
    const slowFirst = slowModels.has(request.model) && !this.slowed.has(request.runId);
    if (slowFirst) this.slowed.add(request.runId);
    const [min, max] = roleLatency.get(request.role) ?? [minLatency, maxLatency];
    const calls = (this.callsPerRun.get(request.runId) ?? 0) + 1;
    this.callsPerRun.set(request.runId, calls);
    const paused = process.env.CRASH_PAUSE_AFTER !== undefined && calls > Number(process.env.CRASH_PAUSE_AFTER);
    const ms = paused ? 2 ** 31 - 1 : slowFirst ? slowModels.get(request.model) : min + Math.random() * (max - min);
    await new Promise((resolve, reject) => {
      const signal = request.signal;
      if (signal && signal.aborted) return reject(new ModelError('aborted', 'model request aborted'));
      const onAbort = () => {
        clearTimeout(timer);
        appendLine(process.env.CRASH_CALLS_LOG, { pid: process.pid, runId: request.runId, role: request.role, aborted: true, t: Date.now() }, false);
        reject(new ModelError('aborted', 'model request aborted'));
      };
      const timer = setTimeout(() => {
        if (signal) signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
    });
    return this.inner.complete(request);
  }
}

async function main() {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(MODEL_PROVIDER)
    .useValue(new SlowOfflineModel())
    .compile();
  let app = moduleRef;
  let port;
  if (process.env.CRASH_MODE === 'http') {
    app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    app.useBodyParser('json', { limit: '2mb' });
    app.useGlobalPipes(VALIDATION_PIPE);
    app.useGlobalFilters(new ErrorFilter());
    await app.init();
    await app.listen(0, '127.0.0.1');
    port = app.getHttpServer().address().port;
  } else {
    moduleRef.useLogger(['error', 'warn']);
    await moduleRef.init();
  }

  const supervisor = app.get(RunSupervisor);
  const owner = supervisor.owner;
  app.get(LiveRunBus)
    .all()
    .subscribe((item) => {
      if (item.kind !== 'events') return;
      for (const e of item.events) {
        appendLine(process.env.CRASH_EVENTS_LOG, { owner, pid: process.pid, runId: item.runId, revision: e.revision, id: e.id, type: e.type, t: Date.now() }, false);
      }
    });

  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    app
      .close()
      .then(() => {
        process.stdout.write(`${JSON.stringify({ closed: true, pid: process.pid })}\n`);
        process.exit(0);
      })
      .catch((err) => {
        process.stderr.write(`close failed: ${err && err.stack ? err.stack : err}\n`);
        process.exit(1);
      });
  });

  // A serving process: it advertises its load (launches are placed), and its dispatcher drives the
  // runs whose lease it takes (placed here, or free).
  await supervisor.startServing();
  await app.get(RunDispatcher).start();
  const launched = [];
  const requests = process.env.CRASH_LAUNCH ? JSON.parse(process.env.CRASH_LAUNCH) : [];
  const identity = { id: 'user:crash-test', name: 'crash-test', roles: ['admin'] };
  for (const input of requests) {
    const result = await app.get(CommandBus).execute(new LaunchRunCommand(input, identity));
    launched.push(result.runId);
  }
  // The project reactor of a serving process: open projects reconciled, then every change reacted to.
  await app.get(ProjectsService).start();
  const projects = [];
  for (const input of process.env.CRASH_PROJECTS ? JSON.parse(process.env.CRASH_PROJECTS) : []) {
    projects.push((await app.get(ProjectsService).launch(input, identity)).projectId);
  }
  if (process.env.CRASH_RECOVERY !== '0') app.get(RecoveryService).start();
  process.stdout.write(`${JSON.stringify({ ready: true, owner, pid: process.pid, launched, projects, port })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
