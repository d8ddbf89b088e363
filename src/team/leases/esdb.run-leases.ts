import { randomUUID } from 'node:crypto';
import type { EsdbConnection, EsdbRecord } from '../../events/esdb.client';
import type { ProcessLoad } from '../dispatch/placement';
import type { RunLeases } from './run-leases.port';

/** Lease states kept per run on the server (older ones are dropped by its scavenge). */
const KEEP = 5;
/**
 * Process adverts read to place a run: the last ones of one shared stream. Each process adverts
 * four times per lease TTL, so this covers the live adverts of up to about 50 processes.
 */
const ADVERTS = 200;

interface LeaseState {
  owner: string | null;
  expiresAt: number;
}

/**
 * EventStoreDB: a run's lease is the last event of `<ns>.lease-<runId>` ({owner, expiresAt}; a
 * release writes owner null). Taking, renewing and releasing read the last state and append the
 * next one at its revision: compare-and-set by expected revision, so of two processes taking a
 * free lease at once exactly one succeeds. Renewing all of a process's leases is one such step per
 * run, run concurrently (there is no multi-stream write).
 */
export class EsdbRunLeases implements RunLeases {
  constructor(
    private readonly conn: EsdbConnection,
    private readonly namespace: string,
  ) {}

  async tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    const stream = this.stream(runId);
    const last = await this.last(stream);
    const state = last && stateOf(last);
    if (state && state.owner !== null && state.owner !== owner && state.expiresAt > nowMs) return false;
    return this.write(stream, last, { owner, expiresAt: nowMs + ttlMs });
  }

  async renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>> {
    const held = new Set<string>();
    await Promise.all(
      [...new Set(runIds)].map(async (runId) => {
        const stream = this.stream(runId);
        const last = await this.last(stream);
        if (!last || stateOf(last).owner !== owner) return;
        if (await this.write(stream, last, { owner, expiresAt: nowMs + ttlMs })) held.add(runId);
      }),
    );
    return held;
  }

  async release(runId: string, owner: string): Promise<void> {
    const stream = this.stream(runId);
    const last = await this.last(stream);
    if (last && stateOf(last).owner === owner) await this.write(stream, last, { owner: null, expiresAt: 0 });
  }

  async holder(runId: string, nowMs: number): Promise<string | undefined> {
    const last = await this.last(this.stream(runId));
    const state = last && stateOf(last);
    return state && state.owner !== null && state.expiresAt > nowMs ? state.owner : undefined;
  }

  /** One read per run, concurrently (there is no query over the lease streams). */
  async held(runIds: string[], nowMs: number): Promise<Set<string>> {
    const out = new Set<string>();
    await Promise.all([...new Set(runIds)].map(async (runId) => (await this.holder(runId, nowMs)) !== undefined && out.add(runId)));
    return out;
  }

  /** Appended to `<ns>.process-loads` (the last states kept); the newest advert of each owner counts. */
  async advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void> {
    await this.appendAdvert({ owner: load.owner, active: load.active, cap: load.cap, expiresAt: nowMs + ttlMs });
  }

  async loads(nowMs: number): Promise<ProcessLoad[]> {
    const records = await this.conn.readStream(this.advertsStream(), 'end', { direction: 'backwards', maxCount: ADVERTS });
    const seen = new Set<string>();
    const out: ProcessLoad[] = [];
    for (const r of records) {
      const a = JSON.parse(Buffer.from(r.data).toString('utf8')) as ProcessLoad & { expiresAt: number };
      if (seen.has(a.owner)) continue;
      seen.add(a.owner);
      if (a.expiresAt > nowMs) out.push({ owner: a.owner, active: a.active, cap: a.cap });
    }
    return out;
  }

  async withdraw(owner: string): Promise<void> {
    await this.appendAdvert({ owner, active: 0, cap: 0, expiresAt: 0 });
  }

  async close(): Promise<void> {}

  private advertsStream(): string {
    return `${this.namespace}.process-loads`;
  }

  private adverts = 0;

  private async appendAdvert(advert: ProcessLoad & { expiresAt: number }): Promise<void> {
    const stream = this.advertsStream();
    await this.conn.append(stream, [{ id: randomUUID(), type: 'ProcessLoad', data: Buffer.from(JSON.stringify(advert)), metadata: Buffer.from('{}') }], 'any');
    // The stream's size limit, set once per process (the server keeps the last ADVERTS).
    if (this.adverts++ === 0) await this.conn.keepLast(stream, ADVERTS);
  }

  private stream(runId: string): string {
    return `${this.namespace}.lease-${runId}`;
  }

  private async last(stream: string): Promise<EsdbRecord | undefined> {
    const [last] = await this.conn.readStream(stream, 'end', { direction: 'backwards', maxCount: 1 });
    return last;
  }

  /** Appends the next state right after `last`; false when another writer got there first. */
  private async write(stream: string, last: EsdbRecord | undefined, state: LeaseState): Promise<boolean> {
    const outcome = await this.conn.append(
      stream,
      [{ id: randomUUID(), type: 'RunLease', data: Buffer.from(JSON.stringify(state)), metadata: Buffer.from('{}') }],
      last ? last.revision : 'no_stream',
    );
    if (outcome.ok && !last) await this.conn.keepLast(stream, KEEP);
    return outcome.ok;
  }
}

function stateOf(r: EsdbRecord): LeaseState {
  const s = JSON.parse(Buffer.from(r.data).toString('utf8')) as Partial<LeaseState>;
  return { owner: typeof s.owner === 'string' ? s.owner : null, expiresAt: typeof s.expiresAt === 'number' ? s.expiresAt : 0 };
}
