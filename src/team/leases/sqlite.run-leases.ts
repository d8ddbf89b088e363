import type Database from 'better-sqlite3';
import type { ProcessLoad } from '../dispatch/placement';
import type { RunLeases } from './run-leases.port';

/**
 * Leases in the events file, on the storage's shared connection (synchronous=NORMAL): taking or renewing
 * one waits for no fsync. A power cut can only lose the latest renewals, and a lease is time-bound
 * anyway; what fences a driver is its DriverClaimed event, which is durable like every append.
 */
export class SqliteRunLeases implements RunLeases {
  private readonly acquire;
  private readonly renewAllStmt;
  private readonly releaseStmt;
  private readonly holderStmt;
  private readonly heldStmt;
  private readonly advertiseStmt;
  private readonly pruneStmt;
  private readonly loadsStmt;
  private readonly withdrawStmt;

  constructor(db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS run_leases (
      run_id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      expires_at INTEGER NOT NULL
    )`);
    // By owner: a process's count of live leases (placement's loads) reads its own rows only.
    db.exec('CREATE INDEX IF NOT EXISTS run_leases_owner ON run_leases (owner, expires_at)');
    // One statement: insert, or take over only when expired or ours.
    this.acquire = db.prepare(
      `INSERT INTO run_leases (run_id, owner, expires_at) VALUES (@runId, @owner, @expiresAt)
       ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE run_leases.expires_at <= @now OR run_leases.owner = excluded.owner`,
    );
    this.renewAllStmt = db.prepare(
      'UPDATE run_leases SET expires_at = @expiresAt WHERE owner = @owner AND run_id IN (SELECT value FROM json_each(@runIds)) RETURNING run_id',
    );
    this.releaseStmt = db.prepare('DELETE FROM run_leases WHERE run_id = ? AND owner = ?');
    this.holderStmt = db.prepare('SELECT owner FROM run_leases WHERE run_id = ? AND expires_at > ?');
    this.heldStmt = db.prepare('SELECT run_id FROM run_leases WHERE run_id IN (SELECT value FROM json_each(@runIds)) AND expires_at > @now');
    db.exec(`CREATE TABLE IF NOT EXISTS process_loads (
      owner TEXT PRIMARY KEY,
      active INTEGER NOT NULL,
      cap INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    )`);
    this.advertiseStmt = db.prepare(
      `INSERT INTO process_loads (owner, active, cap, expires_at) VALUES (@owner, @active, @cap, @expiresAt)
       ON CONFLICT (owner) DO UPDATE SET active = excluded.active, cap = excluded.cap, expires_at = excluded.expires_at`,
    );
    // Expired adverts (crashed processes) are cleared by the next advert of anyone.
    this.pruneStmt = db.prepare('DELETE FROM process_loads WHERE expires_at <= ?');
    this.loadsStmt = db.prepare(
      `SELECT p.owner, p.cap, max(p.active, (SELECT count(*) FROM run_leases l WHERE l.owner = p.owner AND l.expires_at > @now)) AS active
       FROM process_loads p WHERE p.expires_at > @now`,
    );
    this.withdrawStmt = db.prepare('DELETE FROM process_loads WHERE owner = ?');
  }

  async tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    return this.acquire.run({ runId, owner, expiresAt: nowMs + ttlMs, now: nowMs }).changes === 1;
  }

  async renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const rows = this.renewAllStmt.all({ runIds: JSON.stringify(runIds), owner, expiresAt: nowMs + ttlMs }) as Array<{ run_id: string }>;
    return new Set(rows.map((r) => r.run_id));
  }

  async release(runId: string, owner: string): Promise<void> {
    this.releaseStmt.run(runId, owner);
  }

  async holder(runId: string, nowMs: number): Promise<string | undefined> {
    return (this.holderStmt.get(runId, nowMs) as { owner: string } | undefined)?.owner;
  }

  async held(runIds: string[], nowMs: number): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const rows = this.heldStmt.all({ runIds: JSON.stringify(runIds), now: nowMs }) as Array<{ run_id: string }>;
    return new Set(rows.map((r) => r.run_id));
  }

  async advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void> {
    this.advertiseStmt.run({ owner: load.owner, active: load.active, cap: load.cap, expiresAt: nowMs + ttlMs });
    this.pruneStmt.run(nowMs);
  }

  async loads(nowMs: number): Promise<ProcessLoad[]> {
    return this.loadsStmt.all({ now: nowMs }) as ProcessLoad[];
  }

  async withdraw(owner: string): Promise<void> {
    this.withdrawStmt.run(owner);
  }

  async close(): Promise<void> {}
}
