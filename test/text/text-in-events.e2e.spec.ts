import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeMessagesApi, toolUseStep, withoutCacheControl, type FakeMessagesApi } from '../support/fake-messages-api';
import { tempDir } from '../support/temp-dir';
import { freshPgSchema, type PgSchema } from '../review-gate/gate/gate-support';
import { appEnv, KEYS, startApp, waitForRun, type AppServer, type Loose } from '../team/resilience/approvals-app';

// Text in events over real HTTP, on SQLite and on PostgreSQL: the app in a child process, its runs
// driven by the real SDK against the fake Messages API. Human text that is not well-formed is
// refused with 400 and writes nothing; machine text with NUL, lone surrogates and bytes that are
// not UTF-8 flows through a run losslessly, and the decision log stays readable and verifiable.

jest.setTimeout(120_000);

const API_KEY = 'sk-ant-test-text-0123456789';
const MODEL = 'claude-sonnet-4-6';
const TEAM = { architect: { model: MODEL }, executor: { model: MODEL }, reviewer: { model: MODEL } };

describe.each([['sqlite'], ['postgres']])('text in events over HTTP (%s)', (store) => {
  let api: FakeMessagesApi;
  let server: AppServer;
  let pg: PgSchema | undefined;
  const dir = tempDir('triad-text-');
  const dataDir = join(dir.path, 'data');

  beforeAll(async () => {
    api = await startFakeMessagesApi({ apiKey: API_KEY });
    pg = store === 'postgres' ? await freshPgSchema() : undefined;
    server = await startApp(appEnv(dataDir, api.url, API_KEY, pg?.env ?? {}));
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await api?.stop();
    await pg?.drop();
    dir.remove();
  });

  const events = async (runId: string): Promise<Array<{ type: string; data: Loose }>> => {
    const res = await server.request('GET', `/v1/runs/${runId}/events`, { as: 'aud' });
    expect(res.status).toBe(200);
    return res.body.events;
  };
  const rawPost = (path: string, body: Buffer | string) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.bob}`, 'content-type': 'application/json' }, body });

  it('machine text flows through a run losslessly; ill-formed human text is refused with 400 and nothing written; the log verifies', async () => {
    api.enqueue(
      toolUseStep('submit_plan', { plan: 'plan: NUL \u0000, lone \ud800, escape \u241b, astral 😀' }),
      toolUseStep('run_command', { command: "printf 'a\\000b\\377c\\n'; printf 'caf\\351\\n' > latin1.txt" }, { text: 'running \udc00 now' }),
      toolUseStep('read_file', { path: 'latin1.txt' }),
      toolUseStep('write_file', { path: 'nul.txt', content: 'x\u0000y' }),
      toolUseStep('submit_work', { summary: 'done \ud83d', files: ['nul.txt'] }),
      toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'fine \u0000' }),
    );
    const launched = await server.request('POST', '/v1/runs', {
      as: 'ann',
      body: { goal: 'Handle odd text', acceptanceCriteria: ['it works'], team: TEAM, toolApproval: { threshold: 'none' } },
    });
    expect(launched.status).toBe(202);
    const runId = launched.body.runId as string;
    const run = await waitForRun(server, runId, (r) => r.status === 'awaiting_review');
    const reviewId = run.pendingReview.reviewId as string;

    // Machine text is stored in its escaped form, and tools received the text the model sent.
    const stored = JSON.stringify(await events(runId));
    for (const escaped of ['NUL ␛u0000, lone ␛uD800, escape ␛␛, astral 😀', 'running ␛uDC00 now', 'a␛u0000b␛xFFc', 'caf␛xE9', 'done ␛uD83D', 'fine ␛u0000']) {
      expect(stored).toContain(JSON.stringify(escaped).slice(1, -1));
    }
    expect(readFileSync(join(dataDir, 'workspaces', runId, 'nul.txt'))).toEqual(Buffer.from('x\u0000y'));
    // The replayed conversation is the one the driver sent the model.
    const ctx = await server.request('GET', `/v1/runs/${runId}/context`, { as: 'aud' });
    expect(ctx.status).toBe(200);
    expect(ctx.body.completeness.score).toBe(1);
    const executorRequests = api.requests.filter((r) => JSON.stringify(r.body?.system ?? '').includes('Executor'));
    // (Less the prompt-cache breakpoints the provider adds to what it sends.)
    expect(ctx.body.roles.executor.messages.slice(0, -1)).toEqual(withoutCacheControl(executorRequests.at(-1)!.body!.messages));

    // Human text: NUL, lone surrogates, bytes that are not UTF-8 — 400 naming the field, nothing written.
    const before = (await events(runId)).length;
    for (const reason of ['looks fine\u0000', 'ok \ud800', 'ok \udfff!']) {
      for (const verb of ['approve', 'reject']) {
        const res = await server.request('POST', `/v1/reviews/${reviewId}/${verb}`, { as: 'bob', body: { reason } });
        expect({ reason, verb, status: res.status }).toEqual({ reason, verb, status: 400 });
        expect(res.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.stringMatching(/^reason holds (a NUL character|an unpaired UTF-16 surrogate)/) });
      }
    }
    const notUtf8 = await rawPost(`/v1/reviews/${reviewId}/approve`, Buffer.concat([Buffer.from('{"reason":"caf'), Buffer.of(0xe9), Buffer.from('"}')]));
    expect(notUtf8.status).toBe(400);
    expect(await notUtf8.json()).toEqual({ statusCode: 400, error: 'Bad Request', message: 'the request body is not valid UTF-8' });
    const inKey = await rawPost(`/v1/reviews/${reviewId}/approve`, '{"reason":"ok","\\u0000":1}');
    expect(inKey.status).toBe(400);
    expect((await server.request('GET', '/v1/runs?status=%00', { as: 'aud' })).status).toBe(400);
    const inPath = await server.request('POST', `/v1/reviews/${reviewId}%00/approve`, { as: 'bob', body: { reason: 'ok' } });
    expect(inPath.status).toBe(400);
    expect(inPath.body.message).toMatch(/^path parameter id holds a NUL character/);
    expect((await events(runId)).length).toBe(before);
    expect((await waitForRun(server, runId, () => true)).status).toBe('awaiting_review');

    // A well-formed reason (astral text and the escape character are fine) is decided; the log reads and verifies.
    const ok = await server.request('POST', `/v1/reviews/${reviewId}/approve`, { as: 'bob', body: { reason: 'good 😀 \u241b' } });
    expect(ok.status).toBe(200);
    await waitForRun(server, runId, (r) => r.status === 'completed');
    const decisions = await server.request('GET', `/v1/decisions?runId=${runId}`, { as: 'aud' });
    expect(decisions.status).toBe(200);
    expect(decisions.body.decisions).toEqual([expect.objectContaining({ reviewId, reason: 'good 😀 \u241b' })]);
    const verify = await server.request('GET', '/v1/decisions/verify', { as: 'aud' });
    expect(verify.status).toBe(200);
    expect(verify.body).toMatchObject({ ok: true, checked: 1 });
  });
});
