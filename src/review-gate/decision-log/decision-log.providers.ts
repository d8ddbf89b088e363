import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit, type Provider } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../events/event-store/event-store.port';
import { ATTESTED_EVENT_TYPES, parseSignedHeadToken, signedHeadProblem, signedHeadToken, type SignedHead } from '../../attestation/attestation';
import { checkAttestations } from '../../attestation/attestation-check';
import { BUNDLE_FORMAT, signBundle, type DecisionBundle } from '../../attestation/bundle';
import { DECISION_EVENT_TYPES, GENESIS_PREV_HASH, type DecisionRecord } from './decision-record';
import { WEBAUTHN_VERIFIER } from '../../attestation/decision-proofs';
import { KeyTrust } from '../../attestation/decision-trust';
import type { KeyRing } from '../../attestation/key-ring';
import type { WebAuthnVerifier } from '../../attestation/personal-signature';
import { Signing } from '../../attestation/signing';
import { HEALTH_REGISTRY, type HealthRegistry } from '../../shared/health';
import { DecisionLog, InvalidSinceError, SINCE_HASH, type DecisionLogVerification } from './decision-log';
import { DecisionLogProjection } from './decision-log.projection';
import { DECISION_RECORD_REPOSITORY, type DecisionRecordRepository } from './decision-record.repository';
import { STORAGE, type Storage } from '../../storage/storage';

/**
 * The Nest shell of the decision log: the repository from the storage (in the events' database;
 * closed with it), the projector started with the application and stopped (checkpoint saved)
 * before the storage closes, and the read/verify service.
 */
@Injectable()
export class DecisionLogProjector implements OnModuleInit, OnModuleDestroy {
  readonly projection: DecisionLogProjection;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(DECISION_RECORD_REPOSITORY) repo: DecisionRecordRepository,
    @Inject(HEALTH_REGISTRY) health: HealthRegistry,
  ) {
    this.projection = new DecisionLogProjection(store, repo, { logger: new Logger('DecisionLog'), health });
  }

  onModuleInit(): void {
    this.projection.start();
  }

  // onModuleDestroy runs before any onApplicationShutdown, so the storage is still open here.
  async onModuleDestroy(): Promise<void> {
    await this.projection.stop();
  }
}

/**
 * The log as served: verification also checks every attestation and personal signature, heads
 * are signed with the server's key, and `since` takes a signed head as well as a bare hash.
 */
@Injectable()
export class DecisionLogService extends DecisionLog {
  constructor(
    @Inject(EVENT_STORE) private readonly events: EventStore,
    @Inject(DECISION_RECORD_REPOSITORY) private readonly records: DecisionRecordRepository,
    projector: DecisionLogProjector,
    @Inject(Signing) private readonly signing: Signing,
    @Inject(WEBAUTHN_VERIFIER) private readonly webauthn: WebAuthnVerifier,
  ) {
    super(events, records, projector.projection);
  }

  /** The head, signed now by this server. */
  async signedHead(): Promise<SignedHead & { token: string }> {
    const signed = this.signing.signHead(await this.head(), new Date().toISOString());
    return { ...signed, token: signedHeadToken(signed) };
  }

  /**
   * The whole log as a self-contained bundle (attestation/bundle.ts), signed by this server: every
   * record, the events they rest on and the key events, with the head of those records signed.
   */
  async exportBundle(): Promise<{ text: string; records: number; head: SignedHead }> {
    const records: DecisionRecord[] = [];
    for await (const r of await this.export()) records.push(r);
    const last = records[records.length - 1];
    const upTo = Math.max(last?.position ?? 0, 0);
    const events = (await readAttested(this.events)).filter((e) => e.position <= upTo || !DECISION_EVENT_TYPES.includes(e.type));
    const head = this.signing.signHead(last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_PREV_HASH }, new Date().toISOString());
    const bundle: DecisionBundle = {
      format: BUNDLE_FORMAT,
      exportedAt: head.at,
      head,
      approvalsFrom: await this.records.approvalsFrom(),
      records,
      events: events.map((e) => ({ id: e.id, type: e.type, streamId: e.streamId, revision: e.revision, position: e.position, data: e.data })),
    };
    return { text: signBundle(bundle, this.signing.signer), records: records.length, head };
  }

  /** The keys this store's signing knows, as `decisions keys` and GET /v1/decisions/keys list them. */
  async keys(): Promise<KeyRing['registered']> {
    return (await this.signing.refresh(this.events)).registered;
  }

  override async verify(options: { since?: string } = {}): Promise<DecisionLogVerification> {
    let since = options.since;
    let sinceHead: SignedHead | undefined;
    const ring = await this.signing.refresh(this.events);
    const trust = new KeyTrust(ring.keys, this.signing.trust.requiredFrom);
    if (since !== undefined && !SINCE_HASH.test(since)) {
      sinceHead = parseSignedHeadToken(since);
      if (!sinceHead) throw new InvalidSinceError('since must be a record hash (64 lowercase hex characters) or a signed head (`triad decisions head` prints one)');
      since = sinceHead.hash;
    }
    const result = await super.verify({ since });
    if (sinceHead) {
      const problem = signedHeadProblem(sinceHead, ring.keys);
      result.since = { ...result.since!, signedHead: { seq: sinceHead.seq, at: sinceHead.at, keyId: sinceHead.keyId, ...(problem ? { problem } : {}) } };
      if (problem || (result.since.seq !== undefined && result.since.seq !== sinceHead.seq)) {
        result.since.extends = false;
        result.since.detail ??= problem ? `the signed head does not verify: ${problem}` : `the signed head names seq ${sinceHead.seq}, the record is at ${result.since.seq}`;
        result.ok = false;
      }
    }
    const attested = await readAttested(this.events);
    result.attestations = await checkAttestations(attested, trust, this.webauthn);
    if (!result.attestations.ok) result.ok = false;
    return result;
  }
}

/** Every event of an attested type, in store order. */
export async function readAttested(store: EventStore): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for (let after = 0; ; ) {
    // Decisions and key events; the decisions' types are attested ones.
    const page = await store.readAll({ after, maxCount: 1000, filter: { types: [...ATTESTED_EVENT_TYPES] } });
    out.push(...page);
    if (page.length < 1000) return out;
    after = page[page.length - 1].position;
  }
}

export const DECISION_LOG_PROVIDERS: Provider[] = [
  { provide: DECISION_RECORD_REPOSITORY, inject: [STORAGE], useFactory: (storage: Storage) => storage.decisions },
  DecisionLogProjector,
  DecisionLogService,
];
