import type { ProcessLoad } from '../dispatch/placement';
import type { RunLeases } from './run-leases.port';

export class InMemoryRunLeases implements RunLeases {
  private readonly leases = new Map<string, { owner: string; expiresAt: number }>();
  private readonly adverts = new Map<string, ProcessLoad & { expiresAt: number }>();

  async tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    const l = this.leases.get(runId);
    if (l && l.owner !== owner && l.expiresAt > nowMs) return false;
    this.leases.set(runId, { owner, expiresAt: nowMs + ttlMs });
    return true;
  }

  async renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>> {
    const held = new Set<string>();
    for (const runId of runIds) {
      const l = this.leases.get(runId);
      if (!l || l.owner !== owner) continue;
      l.expiresAt = nowMs + ttlMs;
      held.add(runId);
    }
    return held;
  }

  async release(runId: string, owner: string): Promise<void> {
    if (this.leases.get(runId)?.owner === owner) this.leases.delete(runId);
  }

  async holder(runId: string, nowMs: number): Promise<string | undefined> {
    const l = this.leases.get(runId);
    return l && l.expiresAt > nowMs ? l.owner : undefined;
  }

  async held(runIds: string[], nowMs: number): Promise<Set<string>> {
    return new Set(runIds.filter((runId) => (this.leases.get(runId)?.expiresAt ?? 0) > nowMs));
  }

  async advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void> {
    this.adverts.set(load.owner, { ...load, expiresAt: nowMs + ttlMs });
  }

  async loads(nowMs: number): Promise<ProcessLoad[]> {
    const out: ProcessLoad[] = [];
    for (const a of this.adverts.values()) {
      if (a.expiresAt <= nowMs) continue;
      let leased = 0;
      for (const l of this.leases.values()) if (l.owner === a.owner && l.expiresAt > nowMs) leased++;
      out.push({ owner: a.owner, cap: a.cap, active: Math.max(a.active, leased) });
    }
    return out;
  }

  async withdraw(owner: string): Promise<void> {
    this.adverts.delete(owner);
  }

  async close(): Promise<void> {}
}
