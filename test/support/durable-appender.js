// Child process for the kill -9 durability test: opens the configured storage, appends in an endless
// loop and prints one line per acknowledged event (its id) only after append() resolved, so every
// printed id must survive the process being killed at any instant.
// Plain JS over dist/ so it runs without jest's transform.
// Env: TRIAD_STORE, TRIAD_DATA_DIR, TRIAD_PG_URL, TRIAD_PG_SCHEMA (optional), ROUND (an id prefix).
const { openStorage } = require('../../dist/storage/storage.js');
const { WrongExpectedRevisionError } = require('../../dist/events/errors.js');

const STREAMS = ['durable-a', 'durable-b', 'durable-c', 'durable-d'];

async function main() {
  const { events: store } = await openStorage(
    { store: process.env.TRIAD_STORE, dataDir: process.env.TRIAD_DATA_DIR, pgUrl: process.env.TRIAD_PG_URL },
    { pgSchema: process.env.TRIAD_PG_SCHEMA || undefined },
  );
  const round = process.env.ROUND;
  const revisions = new Map();
  for (const s of STREAMS) revisions.set(s, await store.streamRevision(s));
  process.stdout.write('ready\n');
  for (let i = 0; ; i++) {
    const streamId = STREAMS[i % STREAMS.length];
    // Every fifth append is a batch of three: a kill can land inside a multi-event append.
    const size = i % 5 === 0 ? 3 : 1;
    const batch = Array.from({ length: size }, (_, k) => ({
      id: `${round}-${i}-${k}`,
      type: 'DurabilityProbe',
      data: { round, i, k, padding: 'p'.repeat(200) },
    }));
    for (;;) {
      const current = revisions.get(streamId);
      try {
        const result = await store.append(streamId, batch, { expectedRevision: current === null ? 'no_stream' : current });
        revisions.set(streamId, result.nextExpectedRevision);
        break;
      } catch (err) {
        // A transaction of the previous (killed) child may commit after this one read the head.
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
        revisions.set(streamId, await store.streamRevision(streamId));
      }
    }
    process.stdout.write(`${batch.map((e) => e.id).join('\n')}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
