// A RunSupervisor over in-memory parts, run from dist/ by plain Node (jest's module runtime cannot
// load NestJS's ES modules): it places a run here as a launch does, launches it, lets the clock
// move SUPERVISOR_LEASE_ADVANCE_MS, starts the run's driver and prints one JSON line: the runs whose
// lease was taken, in order, and whether the run reached the review gate. With SUPERVISOR_BURST=N
// it places N runs at once instead, under a cap of SUPERVISOR_CAP, and prints their placements.
'use strict';
require('reflect-metadata');
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const dist = path.resolve(__dirname, '..', '..', 'dist');
const { InMemoryCheckpointStore } = require(path.join(dist, 'checkpoint/checkpoint-stores.js'));
const { loadConfig } = require(path.join(dist, 'config/config.js'));
const { commandPathFor } = require(path.join(dist, 'events/command-handling.js'));
const { InMemoryEventStore } = require(path.join(dist, 'events/in-memory.event-store.js'));
const { launchRun } = require(path.join(dist, 'team/launch.js'));
const { InMemoryRunLeases } = require(path.join(dist, 'team/leases/run-leases.js'));
const { LiveRunBus } = require(path.join(dist, 'team/live-run-bus.js'));
const { OfflineModelProvider } = require(path.join(dist, 'team/models/offline.model.js'));
const { RunSupervisor } = require(path.join(dist, 'team/dispatch/run-supervisor.js'));
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
  const supervisor = new RunSupervisor(
    store,
    new OfflineModelProvider(),
    createDefaultToolRegistry(),
    clock,
    { newId: () => randomUUID() },
    loadConfig({ TRIAD_DATA_DIR: process.env.SUPERVISOR_LEASE_DIR }),
    { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
    leases,
    new InMemoryCheckpointStore(),
    { leaseTtlMs: ttl, checkpointEveryTurns: 100, maxActiveRuns: Number(process.env.SUPERVISOR_CAP ?? 10) },
    new LiveRunBus({}, owner),
    owner,
    commandPath,
  );
  await supervisor.startServing();
  const burst = Number(process.env.SUPERVISOR_BURST ?? 0);
  if (burst > 0) {
    const placements = await Promise.all(Array.from({ length: burst }, (_, i) => supervisor.place(`run_burst_${i}`)));
    await supervisor.onApplicationShutdown();
    process.stdout.write(`${JSON.stringify({ placements: placements.map((p) => p.kind), load: supervisor.load, takes })}\n`);
    return;
  }
  const runId = 'run_lease_child';
  const placement = await supervisor.place(runId);
  await launchRun(commandPath, { goal: 'Write hello.txt', acceptanceCriteria: ['hello.txt exists'] }, { runId, launchedBy: 'user:ann', now: new Date(now), provider: 'offline', defaultModel: 'offline' });
  now += Number(process.env.SUPERVISOR_LEASE_ADVANCE_MS);
  const state = await supervisor.start(runId);
  await supervisor.onApplicationShutdown();
  process.stdout.write(`${JSON.stringify({ placement, takes, atGate: state !== undefined && state.review !== undefined})}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err && err.stack) || err}\n`);
  process.exit(1);
});
