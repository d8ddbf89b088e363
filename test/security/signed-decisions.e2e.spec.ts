import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReviewDecidedData } from '../../src/team/domain/run-events';
import { tempDir } from '../support/temp-dir';
import { API_KEYS_ENV, awaitingReview, launch, lastJson, pendingReviewOf, runCli, runEvents, startServer, waitForRun, type GateServer } from '../review-gate/gate/gate-support';

// People sign their own decisions with their SSH key (`ssh-keygen -Y sign`, as git does), on a
// server that takes only signed human decisions. The attacks: an API key alone, a signature
// lifted from one decision onto another, a key registered to nobody, a revoked key.

jest.setTimeout(180_000);

type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response JSON, asserted on

describe('decisions signed by their decider', () => {
  const dir = tempDir('triad-signed-');
  const dataDir = join(dir.path, 'data');
  let server: GateServer;
  let env: Record<string, string>;
  let ritaSecret: string;
  const ritaKey = join(dir.path, 'rita_ed25519');
  const otherKey = join(dir.path, 'other_ed25519');

  beforeAll(async () => {
    mkdirSync(dataDir, { recursive: true });
    for (const k of [ritaKey, otherKey]) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'test', '-f', k]);
    env = { TRIAD_DATA_DIR: dataDir, TRIAD_API_KEYS: API_KEYS_ENV, TRIAD_REQUIRE_SIGNED_DECISIONS: '1' };
    const added = await runCli(['keys', 'add', 'rita', '--roles', 'reviewer', '--public-key', `${ritaKey}.pub`, '--json'], env);
    expect(added.code).toBe(0);
    ritaSecret = lastJson<{ secret: string }>(added.stdout).secret;
    writeFileSync(join(dir.path, 'rita.key'), `${ritaSecret}\n`, { mode: 0o600 });
    server = await startServer(env);
  }, 90_000);
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  const pendingRun = async () => {
    const runId = await launch(server);
    return { runId, review: pendingReviewOf(await waitForRun(server, runId, awaitingReview)) };
  };

  it('an API key alone does not decide, over HTTP or at the CLI; nothing is written', async () => {
    const { runId, review } = await pendingRun();
    const before = (await runEvents(server, runId)).length;
    const http = await server.request('POST', `/v1/reviews/${review.reviewId}/approve`, { as: { secret: ritaSecret }, body: { reason: 'ok' } });
    expect(http.status).toBe(403);
    expect(http.body.message).toMatch(/only signed human decisions/);
    const cli = await runCli(['review', 'approve', review.reviewId, '--reason', 'ok', '--key-file', join(dir.path, 'rita.key')], env);
    expect(cli.code).toBe(5);
    expect(cli.stderr.trim().split('\n')).toHaveLength(1);
    expect((await runEvents(server, runId)).length).toBe(before);
  });

  it('signed with the registered SSH key, the decision lands with its signature, and verify checks it', async () => {
    const { runId, review } = await pendingRun();
    const signed = await runCli(['review', 'approve', review.reviewId, '--reason', 'read every file', '--sign-with', ritaKey], env);
    expect(signed.code).toBe(0);
    await waitForRun(server, runId, (r) => r.status === 'completed');
    const decided = (await runEvents(server, runId)).find((e) => e.type === 'ReviewDecided')!.data as ReviewDecidedData;
    expect(decided).toMatchObject({ decider: 'user:rita', authenticatedBy: 'signature', signature: { type: 'ssh', signature: expect.stringContaining('BEGIN SSH SIGNATURE') } });
    const verified = await server.request<Loose>('GET', '/v1/decisions/verify', { as: 'aud' });
    expect(verified.body).toMatchObject({ ok: true, attestations: { ok: true, personallySigned: 1 } });

    // The same signature offered for another decision (another run's review) is refused.
    const next = await pendingRun();
    const lifted = await server.request('POST', `/v1/reviews/${next.review.reviewId}/approve`, { as: { secret: ritaSecret }, body: { reason: 'read every file', signature: decided.signature } });
    expect(lifted.status).toBe(403);
    expect(lifted.body.message).toMatch(/does not sign this decision/);

    // What the statement route gives is what a person signs: signed by hand, it decides.
    const st = await server.request<Loose>('GET', `/v1/reviews/${next.review.reviewId}/statement?outcome=approved&reason=${encodeURIComponent('by hand')}`, { as: { secret: ritaSecret } });
    expect(st.status).toBe(200);
    const sig = execFileSync('ssh-keygen', ['-Y', 'sign', '-n', 'triad-decision', '-q', '-f', ritaKey], { input: st.body.text }).toString();
    const byHand = await server.request('POST', `/v1/reviews/${next.review.reviewId}/approve`, { as: { secret: ritaSecret }, body: { reason: 'by hand', signature: { type: 'ssh', signature: sig } } });
    expect(byHand.status).toBe(200);
  });

  it('a key registered to nobody, or a revoked key, does not decide', async () => {
    const { review } = await pendingRun();
    const stranger = await runCli(['review', 'approve', review.reviewId, '--reason', 'ok', '--sign-with', otherKey], env);
    expect(stranger.code).toBe(5);
    expect(stranger.stderr).toMatch(/registered to nobody/);

    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${ritaKey}.pub`]).toString().split(' ')[1];
    expect((await runCli(['keys', 'revoke-public-key', 'rita', fingerprint, '--reason', 'laptop lost'], env)).code).toBe(0);
    const revoked = await runCli(['review', 'approve', review.reviewId, '--reason', 'ok', '--sign-with', ritaKey], env);
    expect(revoked.code).toBe(5);
    // The decisions signed before the revocation still verify.
    const verified = await server.request<Loose>('GET', '/v1/decisions/verify', { as: 'aud' });
    expect(verified.body).toMatchObject({ ok: true, attestations: { personallySigned: 2 } });
    expect(readFileSync(`${ritaKey}.pub`, 'utf8')).toContain('ssh-ed25519');
  });
});
