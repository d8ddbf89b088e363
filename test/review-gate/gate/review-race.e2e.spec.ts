import { join } from 'node:path';
import { tempDir } from '../../support/temp-dir';
import {
  awaitingReview,
  decisionsIn,
  freshPgSchema,
  getRun,
  launch,
  pendingReviewOf,
  runEvents,
  startServer,
  waitForRun,
  type GateServer,
  type PgSchema,
} from './gate-support';

// Two concurrent decisions on one review yield exactly one decision: 50 mixed approve /
// reject requests race over HTTP; one gets 200, every other one 409, and the run's stream holds
// exactly one ReviewDecided. On SQLite, and on PostgreSQL (which fails, not skips, when down).

jest.setTimeout(120_000);

const CONCURRENT = 50;

async function race(server: GateServer): Promise<void> {
  const runId = await launch(server);
  const { reviewId } = pendingReviewOf(await waitForRun(server, runId, awaitingReview));

  const requests = Array.from({ length: CONCURRENT }, (_, i) => {
    const verb = i % 3 === 0 ? 'approve' : 'reject';
    const body = verb === 'approve' ? { reason: `approve #${i}` } : { reason: `reject #${i}`, rework: i % 3 === 1 };
    return server.request('POST', `/v1/reviews/${reviewId}/${verb}`, { as: 'bob', body }).then((res) => ({ i, verb, ...res }));
  });
  const results = await Promise.all(requests);

  const statuses = results.map((r) => r.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  expect(statuses.filter((s) => s === 409)).toHaveLength(CONCURRENT - 1);
  for (const r of results.filter((x) => x.status === 409)) expect(r.body).toMatchObject({ statusCode: 409, error: 'Conflict' });

  const winner = results.find((r) => r.status === 200)!;
  const decisions = decisionsIn(await runEvents(server, runId));
  expect(decisions).toHaveLength(1);
  expect(decisions[0]).toMatchObject({ reviewId, decider: 'user:bob', decisionId: winner.body.decisionId, reason: `${winner.verb} #${winner.i}` });

  // The run went where the winner sent it.
  if (winner.verb === 'approve') expect(await getRun(server, runId)).toMatchObject({ status: 'completed', terminationReason: 'COMPLETED' });
  else if (winner.i % 3 === 2) expect(await getRun(server, runId)).toMatchObject({ status: 'failed', terminationReason: 'REJECTED' });
  else expect(pendingReviewOf(await waitForRun(server, runId, (r) => awaitingReview(r) && r.iteration === 2)).reviewId).toBe(`rev_${runId}_2`);
  // Still exactly one decision on the raced review, whatever happened after.
  expect(decisionsIn(await runEvents(server, runId)).filter((d) => d.reviewId === reviewId)).toHaveLength(1);
}

describe('concurrent decisions on one review', () => {
  describe('SQLite', () => {
    const dir = tempDir('triad-gate-race-');
    let server: GateServer;
    beforeAll(async () => {
      server = await startServer({ TRIAD_DATA_DIR: join(dir.path, 'data') });
    });
    afterAll(async () => {
      await server?.close();
      dir.remove();
    });

    it(`${CONCURRENT} concurrent approve/reject requests: one 200, the rest 409, one ReviewDecided`, async () => {
      await race(server);
    });

    it('and again, on a second run', async () => {
      await race(server);
    });
  });

  describe('PostgreSQL', () => {
    const dir = tempDir('triad-gate-race-pg-');
    let pg: PgSchema | undefined;
    let server: GateServer | undefined;
    beforeAll(async () => {
      pg = await freshPgSchema();
      server = await startServer({ TRIAD_DATA_DIR: join(dir.path, 'data'), ...pg.env });
    });
    afterAll(async () => {
      await server?.close();
      await pg?.drop();
      dir.remove();
    });

    it(`${CONCURRENT} concurrent approve/reject requests: one 200, the rest 409, one ReviewDecided`, async () => {
      expect(server).toBeDefined();
      await race(server!);
    });

    it('and again, on a second run', async () => {
      await race(server!);
    });
  });
});
