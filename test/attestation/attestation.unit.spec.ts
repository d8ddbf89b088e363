import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { attestationProblem, parseSignedHeadToken, publicKeyText, Signer, signedHeadProblem, signedHeadToken, type KnownKey } from '../../src/attestation/attestation';
import { BUNDLE_FORMAT, signBundle, verifyBundle, type DecisionBundle } from '../../src/attestation/bundle';
import { guardEvent, newGateGuard } from '../../src/attestation/decision-gate';
import { installDecisionTrust, KeyTrust } from '../../src/attestation/decision-trust';
import { foldKeyRing, SIGNING_KEYS_STREAM, type SigningKeyRegisteredData } from '../../src/attestation/key-ring';
import { chainOf, decisionEvent } from '../review-gate/decision-log/fixtures';

const newSigner = () => new Signer(generateKeyPairSync('ed25519').privateKey);
const known = (s: Signer): KnownKey => ({ keyId: s.keyId, key: s.publicKey });
const ring = (...signers: Signer[]) => new Map(signers.map((s) => [s.keyId, known(s)]));
const RUN = { streamId: 'run-run_1' };
const at = (position: number, revision = 4) => ({ ...RUN, revision, position });

describe('attestations', () => {
  const server = newSigner();
  const decision = () => structuredClone(decisionEvent(1).data) as Record<string, unknown>;

  it('given a decision the server attested, then it holds against the server key', () => {
    const data = decision();
    data.attestation = server.attest('ReviewDecided', data, RUN);
    expect(attestationProblem('ReviewDecided', data, at(5), ring(server))).toBeUndefined();
  });

  it('given no attestation, a key nobody trusts, an edited field, another type or a moved attestation, then each is named', () => {
    const data = decision();
    expect(attestationProblem('ReviewDecided', data, at(5), ring(server))).toBe('unsigned');
    const forger = newSigner();
    expect(attestationProblem('ReviewDecided', { ...data, attestation: forger.attest('ReviewDecided', data, RUN) }, at(5), ring(server))).toBe('unknown_signer');
    const signed = { ...data, attestation: server.attest('ReviewDecided', data, RUN) };
    expect(attestationProblem('ReviewDecided', { ...signed, decider: 'user:eve' }, at(5), ring(server))).toBe('bad_signature');
    expect(attestationProblem('ToolApprovalDecided', signed, at(5), ring(server))).toBe('bad_signature');
    const other = { ...decision(), reviewId: 'rev_run_2_1', outcome: 'rejected' };
    expect(attestationProblem('ReviewDecided', { ...other, attestation: signed.attestation }, at(5), ring(server))).toBe('bad_signature');
  });

  it('given an attestation bound to its stream and revision, then a copy in another run or at another revision is bad_signature', () => {
    const data = decision();
    data.attestation = server.attest('ReviewDecided', data, { streamId: 'run-run_1', revision: 4 });
    expect(attestationProblem('ReviewDecided', data, at(5, 4), ring(server))).toBeUndefined();
    expect(attestationProblem('ReviewDecided', data, { streamId: 'run-run_2', revision: 4, position: 5 }, ring(server))).toBe('bad_signature');
    expect(attestationProblem('ReviewDecided', data, at(9, 7), ring(server))).toBe('bad_signature');
  });

  it('given a key revoked at a position, then its attestations from there on are revoked_signer, earlier ones hold', () => {
    const data = decision();
    data.attestation = server.attest('ReviewDecided', data, RUN);
    const keys = new Map([[server.keyId, { ...known(server), revokedFrom: 10 }]]);
    expect(attestationProblem('ReviewDecided', data, at(9), keys)).toBeUndefined();
    expect(attestationProblem('ReviewDecided', data, at(10), keys)).toBe('revoked_signer');
  });

  it('given a signed head, then its token round-trips and verifies; a changed seq or hash does not', () => {
    const head = server.signHead({ seq: 3, hash: 'a'.repeat(64), at: '2026-01-01T00:00:00.000Z' });
    expect(parseSignedHeadToken(signedHeadToken(head))).toEqual(head);
    expect(signedHeadProblem(head, ring(server))).toBeUndefined();
    expect(signedHeadProblem({ ...head, seq: 2 }, ring(server))).toBe('bad_signature');
    expect(signedHeadProblem({ ...head, hash: 'b'.repeat(64) }, ring(server))).toBe('bad_signature');
    expect(signedHeadProblem(head, ring(newSigner()))).toBe('unknown_signer');
    expect(parseSignedHeadToken('not-a-token')).toBeUndefined();
  });
});

describe('the key ring', () => {
  const registration = (s: Signer, by: Signer, position: number) => {
    const data: SigningKeyRegisteredData = { keyId: s.keyId, publicKey: publicKeyText(s.publicKey), registeredBy: 'server', storeHead: position - 1, at: '2026-01-01T00:00:00.000Z' };
    data.attestation = by.attest('SigningKeyRegistered', data, { streamId: SIGNING_KEYS_STREAM });
    return { type: 'SigningKeyRegistered', data, position, revision: position };
  };

  it('given a self-registered key and one registered by a trusted key, then only the trusted chain is trusted', () => {
    const a = newSigner();
    const b = newSigner();
    const stranger = newSigner();
    const r = foldKeyRing([known(a)], [registration(a, a, 3), registration(stranger, stranger, 4), registration(b, a, 5)]);
    expect([...r.keys.keys()].sort()).toEqual([a.keyId, b.keyId].sort());
    // After the head the first trusted registration signed (not the stranger's).
    expect(r.signingSince).toBe(3);
    expect(r.registered.find((k) => k.keyId === stranger.keyId)?.trusted).toBe(false);
  });
});

describe('the gate guard (given / when / then)', () => {
  const server = newSigner();
  beforeAll(() => installDecisionTrust(new KeyTrust(ring(server), 100)));
  afterAll(() => installDecisionTrust({ refusal: () => undefined }));

  const approved = (attested: boolean) => {
    const data = structuredClone(decisionEvent(1).data) as Record<string, unknown>;
    data.outcome = 'approved';
    if (attested) data.attestation = server.attest('ReviewDecided', data, RUN);
    return { type: 'ReviewDecided', data };
  };
  const completed = { type: 'RunEnded', data: { status: 'completed', reason: 'COMPLETED', at: 'x' } };

  it('given a review waiting, when an unsigned approval and a RunEnded COMPLETED arrive, then both are refused', () => {
    const guard = newGateGuard();
    expect(guardEvent(guard, 'awaitingReview', approved(false), at(200))).toMatchObject({ problem: 'unsigned', decider: 'user:bob', outcome: 'approved' });
    expect(guardEvent(guard, 'awaitingReview', completed, at(201))).toMatchObject({ problem: 'no_decision', type: 'RunEnded' });
    expect(guard.refused).toHaveLength(2);
  });

  it('given a review waiting, when an attested approval arrives, then it and its RunEnded are acted on', () => {
    const guard = newGateGuard();
    expect(guardEvent(guard, 'awaitingReview', approved(true), at(200))).toBeUndefined();
    expect(guardEvent(guard, 'awaitingReview', completed, at(201))).toBeUndefined();
  });

  it('given an unsigned decision recorded before the store signed, then it is acted on as before', () => {
    const guard = newGateGuard();
    expect(guardEvent(guard, 'awaitingReview', approved(false), at(50))).toBeUndefined();
    expect(guardEvent(guard, 'awaitingReview', completed, at(51))).toBeUndefined();
  });

  it('given signing began, when an unsigned ReviewOpened (with an auto-approve timeout) or ToolApprovalRequested arrives, then it is refused', () => {
    const guard = newGateGuard();
    const opened = { type: 'ReviewOpened', data: { reviewId: 'rev_run_1_1', iteration: 1, timeout: { policy: 'auto_approve', dueAt: '2000-01-01T00:00:00.000Z' } } };
    expect(guardEvent(guard, 'approved', opened, at(200))).toMatchObject({ problem: 'unsigned', type: 'ReviewOpened' });
    expect(guardEvent(guard, 'executing', { type: 'ToolApprovalRequested', data: { approvalId: 'apr_run_1.tu_1' } }, at(201))).toMatchObject({ problem: 'unsigned' });
  });

  it('given an attested approval of an earlier review, when it arrives while a later review is open, then it is misplaced and the run does not end', () => {
    const guard = newGateGuard();
    const opened = { type: 'ReviewOpened', data: { reviewId: 'rev_run_1_2', iteration: 2 } };
    (opened.data as Record<string, unknown>).attestation = server.attest('ReviewOpened', opened.data, RUN);
    expect(guardEvent(guard, 'approved', opened, at(200))).toBeUndefined();
    expect(guardEvent(guard, 'awaitingReview', approved(true), at(201))).toMatchObject({ problem: 'misplaced' });
    expect(guardEvent(guard, 'awaitingReview', completed, at(202))).toMatchObject({ problem: 'no_decision' });
  });

  it('given a run still executing, when a RunEnded COMPLETED arrives, then it is refused; a cancel is not', () => {
    const guard = newGateGuard();
    expect(guardEvent(guard, 'executing', completed, at(300))).toMatchObject({ problem: 'no_decision' });
    expect(guardEvent(guard, 'executing', { type: 'RunEnded', data: { status: 'cancelled', reason: 'CANCELLED', at: 'x' } }, at(301))).toBeUndefined();
  });
});

describe('a decision bundle', () => {
  const server = newSigner();
  function bundleText(): string {
    const reg: SigningKeyRegisteredData = { keyId: server.keyId, publicKey: publicKeyText(server.publicKey), registeredBy: 'server', at: '2026-01-01T00:00:00.000Z' };
    reg.attestation = server.attest('SigningKeyRegistered', reg, { streamId: SIGNING_KEYS_STREAM });
    const decisions = [1, 2, 3].map((i) => {
      const e = decisionEvent(i);
      (e.data as Record<string, unknown>).attestation = server.attest('ReviewDecided', e.data, { streamId: e.streamId });
      return e;
    });
    const records = chainOf(decisions);
    const last = records[records.length - 1];
    const bundle: DecisionBundle = {
      format: BUNDLE_FORMAT,
      exportedAt: '2026-01-02T00:00:00.000Z',
      head: server.signHead({ seq: last.seq, hash: last.hash, at: '2026-01-02T00:00:00.000Z' }),
      approvalsFrom: 0,
      records,
      events: [
        { id: 'e0', type: 'SigningKeyRegistered', streamId: SIGNING_KEYS_STREAM, revision: 0, position: 1, data: reg },
        ...decisions.map((e, i) => ({ id: `e${i + 1}`, type: e.type, streamId: e.streamId, revision: 0, position: e.position, data: e.data })),
      ],
    };
    return signBundle(bundle, server);
  }
  const webauthn = () => Promise.resolve(false);

  it('given a bundle as exported, then it verifies, pinned by its own head', async () => {
    const text = bundleText();
    const head = (JSON.parse(text) as DecisionBundle).head;
    await expect(verifyBundle(text, { webauthn })).resolves.toMatchObject({ ok: true, trust: 'self', signature: 'ok', records: 3 });
    await expect(verifyBundle(text, { webauthn, since: head })).resolves.toMatchObject({ ok: true, trust: 'pinned', since: { extends: true } });
  });

  it('given a head kept from another server key, then the bundle is not trusted', async () => {
    const other = newSigner().signHead({ seq: 1, hash: 'a'.repeat(64), at: 'x' });
    await expect(verifyBundle(bundleText(), { webauthn, since: other })).resolves.toMatchObject({ ok: false });
  });

  it('property: any single-byte change anywhere in the bundle fails its verification', async () => {
    const bytes = Buffer.from(bundleText());
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, delta) => {
        const changed = Buffer.from(bytes);
        changed[at] = (changed[at] + delta) % 256;
        const result = await verifyBundle(changed.toString('utf8'), { webauthn });
        if (result.ok) throw new Error(`still verifies after byte ${at} changed: …${bytes.subarray(Math.max(0, at - 60), at + 20).toString()}…`);
      }),
      { numRuns: 1500 },
    );
  });
});
