// A driver pool and placement over in-memory parts, run from dist/ by plain Node (a process of its
// own, with its own clock): it places a run here as a launch does, launches it, lets the clock
// move SUPERVISOR_LEASE_ADVANCE_MS, starts the run's driver and prints one JSON line: the runs whose
// lease was taken, in order, and whether the run reached the review gate. With SUPERVISOR_BURST=N
// it places N runs at once instead, under a cap of SUPERVISOR_CAP, and prints their placements.
'use strict';
require('reflect-metadata');
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const dist = path.resolve(__dirname, '..', '..', 'dist');
const { InMemoryCheckpointStore } = require(path.join(dist, 'checkpoint/in-memory.checkpoint-store.js'));
const { loadConfig } = require(path.join(dist, 'config/config.js'));
const { commandPathFor } = require(path.join(dist, 'events/command-handling.js'));
const { InMemoryEventStore } = require(path.join(dist, 'events/event-store/in-memory.event-store.js'));
const { launchRun } = require(path.join(dist, 'team/commands/launch.js'));
const { InMemoryRunLeases } = require(path.join(dist, 'team/leases/in-memory.run-leases.js'));
const { LiveRunBus } = require(path.join(dist, 'team/live/live-run-bus.js'));
const { OfflineModelProvider } = require(path.join(dist, 'team/models/offline.model.js'));
const { DriverPool } = require(path.join(dist, 'team/dispatch/driver-pool.js'));
const { Placement } = require(path.join(dist, 'team/dispatch/run-placement.js'));
const { RunDriver } = require(path.join(dist, 'team/driver/run-driver.js'));
const { processModelOf } = require(path.join(dist, 'team/domain/model-pin.js'));
const { createWorkspace } = require(path.join(dist, 'team/tools/workspace.js'));
const { createDefaultToolRegistry } = require(path.join(dist, 'team/tools/tool-registry.js'));

// No app, no signing key: the store is written unsigned here, and this process's folds act on it
// as written (an app installs its trust from its key; see src/attestation/decision-trust.ts).
require(path.join(dist, 'attestation/decision-trust.js')).installDecisionTrust({ refusal: () => undefined });

async function main() {
  const ttl = Number(process.env.SUPERVISOR_LEASE_TTL_MS);
  const store = new InMemoryEventStore();
  const leases = new InMemoryRunLeases();
  const takes = [];
  const tryAcquire = leases.tryAcquire.bind(leases);
  leases.tryAcquire = (runId, owner, ttlMs, nowMs) => {
    takes.push(runId);
    return tryAcquire(runId, owner, ttlMs, nowMs);
  };
  let now = Date.parse('2026-01-05T09:00:00.000Z');
  const clock = { now: () => now };
  const owner = 'proc-a';
  const commandPath = commandPathFor(store, owner);
  const model = new OfflineModelProvider();
  const tools = createDefaultToolRegistry();
  const checkpoints = new InMemoryCheckpointStore();
  const options = { leaseTtlMs: ttl, checkpointEveryTurns: 100, maxActiveRuns: Number(process.env.SUPERVISOR_CAP ?? 10) };
  const workspaceRoot = path.join(loadConfig({ TRIAD_DATA_DIR: process.env.SUPERVISOR_LEASE_DIR }).dataDir, 'workspaces');
  const logger = { log: () => undefined, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) };
  const newDriver = (runId) =>
    new RunDriver(runId, {
      store,
      path: commandPath,
      model,
      tools,
      clock,
      ids: { newId: () => randomUUID() },
      workspaceRoot,
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
      observer: new LiveRunBus({}, owner),
      owner,
      checkpoints,
      checkpointEveryTurns: options.checkpointEveryTurns,
    });
  const pool = new DriverPool({ newDriver, prepareWorkspace: (runId) => createWorkspace(workspaceRoot, runId), store, checkpoints, leases, tools, here: processModelOf(model), clock, options, owner, logger });
  const placement = new Placement(pool, leases, clock, options, owner, logger);
  const shutdown = () => Promise.all([placement.onApplicationShutdown(), pool.onApplicationShutdown()]);
  await placement.startServing();
  const burst = Number(process.env.SUPERVISOR_BURST ?? 0);
  if (burst > 0) {
    const placements = await Promise.all(Array.from({ length: burst }, (_, i) => placement.place(`run_burst_${i}`)));
    await shutdown();
    process.stdout.write(`${JSON.stringify({ placements: placements.map((p) => p.kind), load: pool.load, takes })}\n`);
    return;
  }
  const runId = 'run_lease_child';
  const placed = await placement.place(runId);
  await launchRun(commandPath, { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'] }, { runId, launchedBy: 'user:ann', now: new Date(now), provider: 'offline', defaultModel: 'offline' });
  now += Number(process.env.SUPERVISOR_LEASE_ADVANCE_MS);
  const state = await (await pool.wake(runId, 'event')).stopped;
  await shutdown();
  process.stdout.write(`${JSON.stringify({ placement: placed, takes, atGate: state !== undefined && state.review !== undefined})}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err && err.stack) || err}\n`);
  process.exit(1);
});
