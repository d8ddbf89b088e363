// Child process for the multi-process PostgreSQL test: appends to streams shared with other
// processes, retrying on expected-revision conflicts, and prints each acknowledged event id.
// Plain JS over dist/ so it runs without jest's transform.
// Env: TRIAD_PG_URL, PG_SCHEMA, WRITER (a tag), APPENDS, STREAMS (comma separated).
const { PostgresEventStore } = require('../../dist/events/event-store/postgres.event-store.js');
const { WrongExpectedRevisionError } = require('../../dist/events/errors.js');

async function main() {
  const store = await PostgresEventStore.connect({ url: process.env.TRIAD_PG_URL, schema: process.env.PG_SCHEMA, poolSize: 2 });
  const writer = process.env.WRITER;
  const appends = Number(process.env.APPENDS);
  const streams = process.env.STREAMS.split(',');
  let conflicts = 0;
  try {
    for (let i = 0; i < appends; i++) {
      const streamId = streams[(i * 7 + writer.length) % streams.length];
      // Every fifth append is a batch of two, so batches interleave with single events.
      const size = i % 5 === 0 ? 2 : 1;
      const batch = Array.from({ length: size }, (_, k) => ({ id: `${writer}-${i}-${k}`, type: 'Written', data: { writer, i, k } }));
      for (;;) {
        const revision = await store.streamRevision(streamId);
        try {
          await store.append(streamId, batch, { expectedRevision: revision === null ? 'no_stream' : revision });
          break;
        } catch (err) {
          if (!(err instanceof WrongExpectedRevisionError)) throw err;
          conflicts++;
        }
      }
      process.stdout.write(`${batch.map((e) => e.id).join('\n')}\n`);
    }
    process.stderr.write(`conflicts ${conflicts}\n`);
  } finally {
    await store.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
