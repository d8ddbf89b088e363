import fc from 'fast-check';
import { randomBytes, randomUUID } from 'node:crypto';
import { seedRunAwaitingReview } from '../../bench/seed-review';
import { commandPathFor } from '../../src/events/command-handling';
import { runContext, runStream } from '../../src/team/runs/run-stream';
import { InvalidAppendError } from '../../src/events/errors';
import type { EventStore } from '../../src/events/event-store/event-store.port';
import { DecisionLog } from '../../src/review-gate/decision-log/decision-log';
import { DecisionLogProjection } from '../../src/review-gate/decision-log/decision-log.projection';
import type { DecisionRecordRepository } from '../../src/review-gate/decision-log/decision-record.repository';
import { decideReview } from '../../src/review-gate/domain/review-decider';
import { openStorage } from '../../src/storage/storage';
import { decodeMachineBytes, decodeMachineText, encodeMachineBytes, encodeMachineText, isWellFormedText } from '../../src/shared/text';
import { dropSchema, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';

// Arbitrary text through every store: machine text (any string, any bytes) goes in through the
// machine-text form and reads back equal and decodes to the original; human text is stored when
// well-formed and refused (nothing written) otherwise; every decision reaches the decision log as
// decided, and the log verifies after each one.

jest.setTimeout(120_000);

/** Full UTF-16 with NUL, lone surrogates of both halves, astral pairs and the escape character. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '😀', '\u241b', 'u', 'x', 'D', '8', '0', 'é', ' '), maxLength: 20 }),
);
const anyBytes = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  fc.array(fc.constantFrom(0x00, 0x41, 0xe2, 0x90, 0x9b, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0xc3, 0xa9, 0xff, 0xc0), { maxLength: 30 }).map((a) => Uint8Array.from(a)),
);

interface Harness {
  store: EventStore;
  decisions: DecisionRecordRepository;
  close(): Promise<void>;
}

const stores: Record<string, () => Promise<Harness>> = {
  memory: async () => {
    const storage = await openStorage({ store: 'memory', dataDir: '/nonexistent' });
    return { store: storage.events, decisions: storage.decisions, close: () => storage.close() };
  },
  sqlite: async () => {
    const dir = tempDir('triad-text-prop-');
    const storage = await openStorage({ store: 'sqlite', dataDir: dir.path });
    return {
      store: storage.events,
      decisions: storage.decisions,
      close: async () => {
        await storage.close();
        dir.remove();
      },
    };
  },
  postgres: async () => {
    const schema = `triad_text_${process.pid}_${randomBytes(5).toString('hex')}`;
    const storage = await openStorage({ store: 'postgres', pgUrl: PG_URL, dataDir: '/nonexistent' }, { pgSchema: schema, pgPoolSize: 4 });
    return {
      store: storage.events,
      decisions: storage.decisions,
      close: async () => {
        await storage.close();
        await dropSchema(schema);
      },
    };
  },
};

describe.each(Object.keys(stores))('arbitrary text through the %s store and the decision log', (kind) => {
  let h: Harness;
  let repo: DecisionRecordRepository;
  let projection: DecisionLogProjection;
  let log: DecisionLog;

  beforeAll(async () => {
    h = await stores[kind]();
    repo = h.decisions;
    projection = new DecisionLogProjection(h.store, repo, { retryDelayMs: 20, checkpointIdleMs: 50 });
    projection.start();
    log = new DecisionLog(h.store, repo, projection);
  });
  afterAll(async () => {
    await projection?.stop();
    await h?.close();
  });

  it('machine text reads back equal and decodes to the original; human text is stored if well-formed, refused otherwise; the log verifies', async () => {
    const decided: Array<{ reviewId: string; reason: string }> = [];
    await fc.assert(
      fc.asyncProperty(anyText, anyBytes, anyText, async (text, bytes, human) => {
        // Machine text: a tool's output and a file's bytes, keys too.
        const output = encodeMachineText(text);
        const file = encodeMachineBytes(bytes);
        const stream = `text-${randomUUID()}`;
        await h.store.append(stream, [{ type: 'ToolOutput', data: { output, files: { [output]: file } }, metadata: { note: output } }]);
        const [read] = await h.store.readStream(stream);
        expect(read.data).toEqual({ output, files: { [output]: file } });
        expect(read.metadata.note).toBe(output);
        expect(decodeMachineText((read.data as { output: string }).output)).toBe(text);
        expect(decodeMachineBytes((read.data as { files: Record<string, string> }).files[output]).equals(Buffer.from(bytes))).toBe(true);

        // Human text as a reviewer's reason, and machine text quoted in one: refused when ill-formed, nothing written.
        const { runId, reviewId } = await seedRunAwaitingReview(h.store, { launchedBy: 'user:lena' });
        const reason = `${human} / ${output}`;
        const head = await h.store.headPosition();
        const decision = commandPathFor(h.store).handle(
          runStream(h.store, runId),
          (state) => decideReview({ type: 'ApproveReview', reviewId, decisionId: randomUUID(), at: new Date().toISOString(), decider: { id: 'user:rita', kind: 'human' }, reason }, state),
          runContext(runId, 'user:rita'),
        );
        if (isWellFormedText(human)) {
          await decision;
          decided.push({ reviewId, reason });
        } else {
          await expect(decision).rejects.toBeInstanceOf(InvalidAppendError);
          expect(await h.store.headPosition()).toBe(head);
        }

        const records = await log.list();
        expect(records.map((r) => ({ reviewId: r.reviewId, reason: r.reason }))).toEqual(decided);
        expect(await log.verify()).toEqual({ ok: true, checked: decided.length });
      }),
      { numRuns: kind === 'memory' ? 150 : 40 },
    );
  });
});
