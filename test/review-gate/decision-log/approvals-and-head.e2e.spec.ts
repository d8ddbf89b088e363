import { join } from 'node:path';
import { SIGNING_KEYS_STREAM } from '../../../src/attestation/key-ring';
import { SqliteEventStore } from '../../../src/events/event-store/sqlite.event-store';
import { decideApproval, type ApprovalCommand } from '../../../src/team/domain/approval-decider';
import { approvalIdOf } from '../../../src/team/domain/approval-id';
import type { TeamRunEvent } from '../../../src/team/domain/run-events';
import { hashOf } from '../../../src/shared/canonical-json';
import { tempDir } from '../../support/temp-dir';
import * as gwt from '../../team/machines/given-when-then';
import { parseCsv } from '../../../src/review-gate/decision-log/decision-export';
import { runCli, startDecisionsServer, type DecisionsServer } from './decisions-server';
import { waitFor } from '../../support/wait-for';

// Tool-approval decisions in the decision log, its head, and verify ?since — through the real app
// over HTTP (SQLite) and the CLI. The approvals are decided by the real decider and appended to a
// run's stream as the approval handler appends them, before the app first opens the store: a store
// written before its signing began (unsigned decisions after that are not acted on). A review
// decided over HTTP then chains on, signed.

jest.setTimeout(120_000);

const APPROVED = approvalIdOf(gwt.RUN_ID, 'tu_a');
const TIMED_OUT = approvalIdOf(gwt.RUN_ID, 'tu_b');
const INPUT = { command: 'make test' };

/** A run whose executor asked for two risky calls; one waits with a timeout that has passed. */
function waitingRun(): TeamRunEvent[] {
  const requested = (toolUseId: string, approvalId: string, timeout?: { policy: 'auto_deny'; dueAt: string }): TeamRunEvent => ({
    type: 'ToolApprovalRequested',
    data: { approvalId, role: 'executor', turn: 1, toolUseId, name: 'run_command', input: INPUT, risk: 'high', threshold: 'high', ...(timeout ? { timeout } : {}), at: gwt.LAUNCHED_AT },
  });
  return [
    gwt.runLaunched(),
    gwt.phaseStarted('planning'),
    ...gwt.submitTurn('architect', 1, gwt.planSubmitted()),
    gwt.phaseStarted('executing'),
    gwt.modelCallStarted('executor', 1),
    gwt.modelCallCompleted('executor', 1, [gwt.toolUse('tu_a', 'run_command', INPUT), gwt.toolUse('tu_b', 'run_command', INPUT)]),
    requested('tu_a', APPROVED),
    requested('tu_b', TIMED_OUT, { policy: 'auto_deny', dueAt: gwt.LAUNCHED_AT }),
  ];
}

describe('tool approvals, head and since in the decision log (HTTP, SQLite)', () => {
  const dir = tempDir('triad-decisions-approvals-');
  const dataDir = join(dir.path, 'data');
  // A key made by this store's first start, as on a store upgraded to signing: what was recorded
  // before it is from before signing began (a key that signed elsewhere would trust none of it).
  const env = { TRIAD_STORE: 'sqlite', TRIAD_DATA_DIR: dataDir, TRIAD_REVIEW_TIMER_MS: '0', TRIAD_RECOVERY_INTERVAL_MS: '0', TRIAD_SIGNING_KEY_FILE: join(dataDir, '..', 'signing-key.pem') };
  let server: DecisionsServer;
  let store: SqliteEventStore;
  /** The position of the app's signing-key registration: where this store's signing began. */
  let signingSince: number;

  const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 60_000, 50, () => server.stderr);

  beforeAll(async () => {
    // Two tool approvals first, before the app opens the store: a human's (recorded as user:Bob, before names were normalised) and the timeout's.
    store = new SqliteEventStore({ file: join(dataDir, 'triad.db') });
    const past = waitingRun();
    const approve: ApprovalCommand = { type: 'ApproveToolCall', approvalId: APPROVED, approver: { id: 'user:Bob', kind: 'human' }, reason: 'safe to run', at: '2025-01-01T00:00:10.000Z' };
    const decided = decideApproval(approve, gwt.fold(past));
    const fire: ApprovalCommand = { type: 'FireApprovalTimeout', approvalId: TIMED_OUT, at: '2025-01-01T00:00:20.000Z', nowMs: Date.parse('2025-01-01T00:00:20.000Z') };
    const timedOut = decideApproval(fire, gwt.fold([...past, ...decided]));
    const stream = `run-${gwt.RUN_ID}`;
    await store.append(stream, past.map((e) => ({ type: e.type, data: e.data })));
    await store.append(stream, [...decided, ...timedOut, gwt.runEnded('CANCELLED')].map((e) => ({ type: e.type, data: e.data })));

    server = await startDecisionsServer(env);
    // Then a review decision: the offline model brings a run to the gate, a reviewer approves.
    const launched = await server.request('POST', '/v1/runs', { as: 'ops', body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
    expect(launched.status).toBe(202);
    const reviewId = await until('the run to reach the gate', async () => {
      const run = await server.request('GET', `/v1/runs/${launched.body.runId}`, { as: 'ops' });
      return run.body?.status === 'awaiting_review' ? (run.body.pendingReview.reviewId as string) : undefined;
    });
    expect((await server.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'rev', body: { reason: 'fine' } })).status).toBe(200);
    await until('the review decision in the log', async () => ((await server.request('GET', '/v1/decisions')).body?.decisions?.length === 3 ? true : undefined));
    signingSince = (await store.readStream(SIGNING_KEYS_STREAM))[0].position;
  });

  /** verify's attestations: the two approvals from before signing began, then the signing key's registration and the review, signed. */
  // The two tool calls' requests and decisions from before signing; the review opened, its decision and the key's registration signed.
  const attestations = () => ({ ok: true, checked: 7, personallySigned: 0, beforeSigning: 4, signingSince, issues: [] });

  afterAll(async () => {
    await store?.close();
    await server?.close();
    dir.remove();
  });

  it('GET /v1/decisions holds the approvals as records of the same chain, with the call, the decider and the timeout policy', async () => {
    const res = await server.request('GET', '/v1/decisions');
    expect(res.status).toBe(200);
    const log = res.body.decisions;
    expect(log.map((r: { seq: number; kind?: string }) => [r.seq, r.kind ?? 'review'])).toEqual([
      [1, 'tool_approval'],
      [2, 'tool_approval'],
      [3, 'review'],
    ]);
    for (let i = 1; i < log.length; i++) expect(log[i].prevHash).toBe(log[i - 1].hash);
    expect(log[0]).toMatchObject({
      decisionId: APPROVED,
      approvalId: APPROVED,
      runId: gwt.RUN_ID,
      toolName: 'run_command',
      inputHash: `sha256:${hashOf(INPUT)}`,
      risk: 'high',
      role: 'executor',
      turn: 1,
      executor: `agent:executor:${gwt.RUN_ID}`,
      decider: 'user:Bob',
      deciderKind: 'human',
      outcome: 'approved',
      reason: 'safe to run',
    });
    expect(log[1]).toMatchObject({ approvalId: TIMED_OUT, decider: 'system', deciderKind: 'system', policy: 'auto_deny', outcome: 'rejected' });
    expect(log[0].reviewId).toBeUndefined();
    expect(log[2]).toMatchObject({ decider: 'user:rev', outcome: 'approved', reviewId: expect.stringMatching(/^rev_run_/) });
    expect((await server.request('GET', '/v1/decisions/verify')).body).toEqual({ ok: true, checked: 3, attestations: attestations() });
  });

  it('filters cover them: kind, outcome, runId, and decider case-insensitively', async () => {
    const seqs = async (query: string) => {
      const res = await server.request('GET', `/v1/decisions?${query}`);
      expect(res.status).toBe(200);
      return res.body.decisions.map((r: { seq: number }) => r.seq);
    };
    expect(await seqs('kind=tool_approval')).toEqual([1, 2]);
    expect(await seqs('kind=review')).toEqual([3]);
    expect(await seqs('outcome=rejected')).toEqual([2]);
    expect(await seqs(`runId=${gwt.RUN_ID}`)).toEqual([1, 2]);
    expect(await seqs('decider=USER:BOB')).toEqual([1]);
    expect(await seqs('decider=system')).toEqual([2]);
    expect((await server.request('GET', '/v1/decisions?kind=other')).status).toBe(400);
  });

  it('exports carry them (NDJSON and CSV)', async () => {
    const ndjson = await server.request('GET', '/v1/decisions?format=ndjson&kind=tool_approval');
    const lines = ndjson.text.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((r) => r.approvalId)).toEqual([APPROVED, TIMED_OUT]);
    const csv = parseCsv((await server.request('GET', '/v1/decisions?format=csv')).text);
    const [header, ...rows] = csv;
    const col = (name: string) => header.indexOf(name);
    expect(rows.map((r) => [r[col('kind')], r[col('toolName')], r[col('risk')], r[col('policy')]])).toEqual([
      ['tool_approval', 'run_command', 'high', ''],
      ['tool_approval', 'run_command', 'high', 'auto_deny'],
      ['', '', '', ''],
    ]);
  });

  it('GET /v1/decisions/head and verify ?since: the log extends its heads; an unknown hash is not found; a malformed one is 400', async () => {
    const head = await server.request('GET', '/v1/decisions/head');
    const log = (await server.request('GET', '/v1/decisions')).body.decisions;
    expect(head).toMatchObject({ status: 200, body: { seq: 3, hash: log[2].hash } });
    expect((await server.request('GET', '/v1/decisions/head', { as: 'ops' })).status).toBe(403);
    expect((await server.request('GET', '/v1/decisions/head', { as: null })).status).toBe(401);

    const since = await server.request('GET', `/v1/decisions/verify?since=${log[0].hash}`);
    // The head is signed (when, by which key); verify names the head it reached as {seq, hash}.
    expect(head.body).toEqual({ seq: 3, hash: log[2].hash, at: expect.any(String), keyId: expect.stringMatching(/^srv_/), sig: expect.any(String), token: expect.any(String) });
    const reached = { seq: head.body.seq, hash: head.body.hash };
    expect(since.body).toEqual({ ok: true, checked: 3, attestations: attestations(), since: { hash: log[0].hash, seq: 1, extends: true, head: reached } });
    // The signed head's token serves as `since` too.
    const sinceToken = await server.request('GET', `/v1/decisions/verify?since=${head.body.token}`);
    expect(sinceToken.body).toMatchObject({ ok: true, since: { hash: log[2].hash, seq: 3, extends: true, head: reached } });
    const unknown = await server.request('GET', `/v1/decisions/verify?since=${'e'.repeat(64)}`);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ ok: false, checked: 3, since: { extends: false, detail: expect.stringMatching(/^not found/) } });
    for (const bad of ['abc', 'E'.repeat(64), `${'e'.repeat(64)}0`]) {
      const res = await server.request('GET', `/v1/decisions/verify?since=${bad}`);
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
    }
  });

  it('the CLI: decisions head, verify --since (exit 0, or 1 when the log does not extend it, 2 when malformed)', async () => {
    const head = await runCli(['decisions', 'head', '--json'], env);
    expect(head.code).toBe(0);
    const { seq, hash } = JSON.parse(head.stdout);
    expect(seq).toBe(3);
    const ok = await runCli(['decisions', 'verify', '--since', hash], env);
    expect({ code: ok.code, stdout: ok.stdout }).toEqual({ code: 0, stdout: expect.stringContaining(`the log extends ${hash} (record 3)`) });
    expect(ok.stdout).toContain(`7 attested event(s) checked, 0 decision(s) signed by their decider; 4 unsigned from before this store's signing began (position ${signingSince})`);
    const unknown = await runCli(['decisions', 'verify', '--since', 'd'.repeat(64)], env);
    expect({ code: unknown.code, stdout: unknown.stdout }).toEqual({ code: 1, stdout: expect.stringContaining('does NOT extend') });
    expect((await runCli(['decisions', 'verify', '--since', 'nope'], env)).code).toBe(2);
    const approvals = await runCli(['decisions', 'list', '--kind', 'tool_approval', '--decider', 'user:bob', '--json'], env);
    expect(approvals.code).toBe(0);
    expect(JSON.parse(approvals.stdout).map((r: { approvalId: string }) => r.approvalId)).toEqual([APPROVED]);
  });
});
