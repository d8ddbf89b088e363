import { randomBytes } from 'node:crypto';
import { CHECKPOINT_SCHEMA_VERSION, restoreCheckpoint, serializeRunState, takeCheckpoint, type Checkpoint } from '../../src/checkpoint/checkpoint';
import type { CheckpointStore } from '../../src/checkpoint/checkpoint-store.port';
import { fold, modelCallCompleted, modelCallStarted, phaseStarted, text, toolUse, worked } from '../team/machines/given-when-then';

/**
 * The checkpoint store contract: every adapter runs this same suite.
 *
 * One harness serves the whole suite (a database of its own); each test works on runs of its own, so
 * the tests need no empty store. `open` gives a store over that database: a durable adapter opens
 * another connection (or pool) each time, as another process would; the in-memory adapter gives its
 * one instance. `overwrite` replaces a run's stored text behind the store's back, as a damaged disk
 * or a hand edit would.
 */
export interface CheckpointStoreHarness {
  open(): Promise<CheckpointStore>;
  overwrite(runId: string, text: string): Promise<void>;
  cleanup(): Promise<void>;
}

const suiteId = randomBytes(3).toString('hex');
let runs = 0;
/** A run id no other test of the suite uses. */
const newRunId = () => `run_cp_${suiteId}_${++runs}`;

const T0 = Date.parse('2025-04-01T08:00:00.000Z');

/** A checkpoint as the store sees it: a header and an opaque state, here with awkward text in it. */
function checkpoint(runId: string, revision: number, reason = 'turns'): Checkpoint {
  return {
    runId,
    revision,
    position: revision + 10,
    schemaVersion: CHECKPOINT_SCHEMA_VERSION,
    contentHash: `sha256:${String(revision).padStart(64, '0')}`,
    createdAt: new Date(T0 + revision * 1000).toISOString(),
    reason,
    state: {
      runId,
      revision,
      text: 'ünïcødé ✓ — "quotes", commas,\nnew lines, \\ backslashes, \u2028 and 😀',
      nested: { list: [1, -2.5, null, true, { deep: ['x'] }], empty: {}, none: [] },
    },
  };
}

export function checkpointStoreContract(name: string, makeHarness: () => Promise<CheckpointStoreHarness>): void {
  describe(`checkpoint store contract: ${name}`, () => {
    let harness: CheckpointStoreHarness;
    let store: CheckpointStore;
    const opened: CheckpointStore[] = [];

    const open = async () => {
      const s = await harness.open();
      opened.push(s);
      return s;
    };

    beforeAll(async () => {
      harness = await makeHarness();
      store = await open();
    });

    afterAll(async () => {
      for (const s of opened.splice(0)) await s.close();
      await harness?.cleanup();
    });

    it('given no checkpoint of a run, then latest is undefined', async () => {
      expect(await store.latest(newRunId())).toBeUndefined();
    });

    it('given a saved checkpoint, then latest reads it back exactly', async () => {
      const runId = newRunId();
      const cp = checkpoint(runId, 7, 'phase');
      await store.save(cp);
      expect(await store.latest(runId)).toEqual(cp);
    });

    it('given a checkpoint taken from a folded run, then what is read back restores to the same state (its hash verifies)', async () => {
      const runId = newRunId();
      const state = fold([
        ...worked(),
        phaseStarted('reviewing'),
        modelCallStarted('reviewer', 1, { content: [text('review "the work" — ünïcødé ✓\nline two')] }),
        modelCallCompleted('reviewer', 1, [text('Looking.'), toolUse('tu_read', 'read_file', { path: 'hello.txt' })]),
      ]);
      state.runId = runId;
      const cp = takeCheckpoint(state, 'turns', new Date(T0));
      await store.save(cp);
      const read = (await store.latest(runId)) as Checkpoint;
      expect(read).toMatchObject({ runId, revision: state.revision, position: state.position, contentHash: cp.contentHash, reason: 'turns' });
      expect(serializeRunState(restoreCheckpoint(read))).toEqual(serializeRunState(state));
    });

    it('given a newer checkpoint, then it replaces the older; an older one saved later never replaces a newer', async () => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 3));
      await store.save(checkpoint(runId, 9));
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 9));
      await store.save(checkpoint(runId, 5));
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 9));
    });

    it('given a checkpoint at the revision already stored, then it replaces the stored one (a checkpoint taken again)', async () => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 4, 'turns'));
      await store.save(checkpoint(runId, 4, 'shutdown'));
      expect(await store.latest(runId)).toMatchObject({ revision: 4, reason: 'shutdown' });
    });

    it('given saves of many revisions racing, then the highest is what stays', async () => {
      const runId = newRunId();
      const revisions = [12, 3, 40, 7, 39, 1, 25, 40, 8, 30];
      await Promise.all(revisions.map((r) => store.save(checkpoint(runId, r))));
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 40));
    });

    it('given saves of many runs made at once, some of one run at one revision, then each run keeps its highest, the later of equals', async () => {
      const runIds = Array.from({ length: 80 }, () => newRunId());
      const saves = runIds.flatMap((runId, i) => [checkpoint(runId, i + 2), checkpoint(runId, 1), checkpoint(runId, i + 2, 'shutdown')]);
      await expect(Promise.all(saves.map((cp) => store.save(cp)))).resolves.toHaveLength(saves.length);
      for (const [i, runId] of runIds.entries()) expect(await store.latest(runId)).toEqual(checkpoint(runId, i + 2, 'shutdown'));
    });

    it("given checkpoints of several runs, then each run's latest is its own", async () => {
      const [a, b] = [newRunId(), newRunId()];
      await store.save(checkpoint(a, 2));
      await store.save(checkpoint(b, 1));
      await store.save(checkpoint(a, 6));
      expect(await store.latest(a)).toEqual(checkpoint(a, 6));
      expect(await store.latest(b)).toEqual(checkpoint(b, 1));
    });

    it('what latest returns is a copy: changing it changes nothing stored', async () => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 2));
      const read = (await store.latest(runId)) as Checkpoint;
      read.revision = 99;
      (read.state as { text: string }).text = 'changed';
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 2));
    });

    it('given a store opened again over the same database, then it reads what was saved and its saves follow the same rule', async () => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 5));
      const again = await open();
      expect(await again.latest(runId)).toEqual(checkpoint(runId, 5));
      await again.save(checkpoint(runId, 4));
      await again.save(checkpoint(runId, 6));
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 6));
    });

    it.each([
      ['broken JSON', '{"runId": "x", "revision": 3', /unparseable/],
      ['a JSON string', '"a checkpoint"', /not a JSON object/],
      ['a JSON number', '42', /not a JSON object/],
      ['JSON null', 'null', /not a JSON object/],
      ['a JSON array', '[1, 2]', /not a JSON object/],
    ])('given a stored checkpoint that is %s, then latest reports it corrupt instead of throwing', async (_, stored, why) => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 3));
      await harness.overwrite(runId, stored);
      const read = await store.latest(runId);
      expect(read).toEqual({ corrupt: expect.stringMatching(why) });
    });

    it('given a corrupt checkpoint, then a newer checkpoint replaces it', async () => {
      const runId = newRunId();
      await store.save(checkpoint(runId, 3));
      await harness.overwrite(runId, '{broken');
      await store.save(checkpoint(runId, 4));
      expect(await store.latest(runId)).toEqual(checkpoint(runId, 4));
    });
  });
}
