import type { RelyingParty } from '../../attestation/webauthn';

/** How long an enrolment challenge waits for the browser's answer (and the browser's own timeout). */
export const ENROLMENT_TTL_MS = 5 * 60 * 1000;
/** Enrolments waiting at once in one process; past it the oldest is dropped. */
export const MAX_PENDING_ENROLMENTS = 1000;

interface Pending {
  challenge: string;
  rp: RelyingParty;
  expiresAt: number;
}

/**
 * Enrolment challenges given out and not yet answered, in this process's memory (as console
 * sessions are): one per person, the latest replacing an earlier one, each used once, expiring,
 * bounded in number. The challenge never leaves the server but in the options it was issued in.
 */
export class PasskeyChallenges {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly ttlMs = ENROLMENT_TTL_MS,
    private readonly max = MAX_PENDING_ENROLMENTS,
  ) {}

  issue(identityId: string, challenge: string, rp: RelyingParty, now: number): void {
    this.prune(now);
    this.pending.delete(identityId);
    // Map keeps insertion order: the first entry is the oldest.
    while (this.pending.size >= this.max) this.pending.delete(this.pending.keys().next().value!);
    this.pending.set(identityId, { challenge, rp, expiresAt: now + this.ttlMs });
  }

  /** The person's waiting challenge, removed: an answer is checked against it once. */
  take(identityId: string, now: number): { challenge: string; rp: RelyingParty } | undefined {
    const p = this.pending.get(identityId);
    this.pending.delete(identityId);
    if (!p || p.expiresAt <= now) return undefined;
    return { challenge: p.challenge, rp: p.rp };
  }

  get size(): number {
    return this.pending.size;
  }

  private prune(now: number): void {
    for (const [id, p] of this.pending) if (p.expiresAt <= now) this.pending.delete(id);
  }
}
