import type Database from 'better-sqlite3';
import type { Pool } from 'pg';
import { LazyPgTable, type TableLogger } from '../../shared/postgres-tables';
import type { ProcessLoad } from '../dispatch/placement';

/**
 * Run leases: which process may drive a run, until when. A lease is taken only when it is free or
 * expired, renewed by its owner's heartbeat, and released on a clean stop. The lease says who
 * should drive; the run stream's expected revision (DriverClaimed) fences a driver that lost it.
 */
export interface RunLeases {
  /** Takes the lease when free, expired, or already ours; true when we hold it now. */
  tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /**
   * Extends all of `owner`'s leases among `runIds` in one statement; returns the runs still held.
   * A run missing from the answer was taken by another owner (or released).
   */
  renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>>;
  release(runId: string, owner: string): Promise<void>;
  /** The current holder, if its lease has not expired. */
  holder(runId: string, nowMs: number): Promise<string | undefined>;
  /** Which of `runIds` a live lease covers (any owner's), in one statement: what recovery skips. */
  held(runIds: string[], nowMs: number): Promise<Set<string>>;
  /**
   * A serving process's advertisement: alive until `nowMs + ttlMs`, driving `active` runs out of
   * `cap`. Renewed by its heartbeat; what launchers read to place runs (see placement.ts).
   */
  advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void>;
  /**
   * The live processes' loads. A process's `active` is the larger of what it advertised and the
   * live leases it holds (on the SQL stores), so a run just handed to it counts at once.
   */
  loads(nowMs: number): Promise<ProcessLoad[]>;
  /** A process stopping: no longer offered runs. */
  withdraw(owner: string): Promise<void>;
  close(): Promise<void>;
}

export const RUN_LEASES = Symbol('RUN_LEASES');

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

export class PostgresRunLeases implements RunLeases {
  private readonly table: LazyPgTable;
  private readonly processes: LazyPgTable;

  constructor(
    private readonly pool: Pool,
    schema: string,
    logger?: TableLogger,
  ) {
    // By owner: a process's count of live leases (placement's loads) reads its own rows only.
    this.table = new LazyPgTable(pool, schema, 'run_leases', 'run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at BIGINT NOT NULL', [
      { name: 'owner', columns: 'owner, expires_at' },
    ], logger);
    this.processes = new LazyPgTable(pool, schema, 'process_loads', 'owner TEXT PRIMARY KEY, active INTEGER NOT NULL, cap INTEGER NOT NULL, expires_at BIGINT NOT NULL');
  }

  /** Creates the tables (and the index) now when they are missing (opening the storage does, so that they are there for a role that may not create them). */
  async ensureTables(): Promise<void> {
    await this.table.ensure();
    await this.processes.ensure();
  }

  async tryAcquire(runId: string, owner: string, ttlMs: number, nowMs: number): Promise<boolean> {
    await this.table.ensure();
    const r = await this.pool.query(
      `INSERT INTO ${this.table.name} AS l (run_id, owner, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
       WHERE l.expires_at <= $4 OR l.owner = EXCLUDED.owner`,
      [runId, owner, nowMs + ttlMs, nowMs],
    );
    return r.rowCount === 1;
  }

  async renewAll(runIds: string[], owner: string, ttlMs: number, nowMs: number): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    await this.table.ensure();
    const { rows } = await this.pool.query<{ run_id: string }>(
      `UPDATE ${this.table.name} SET expires_at = $1 WHERE owner = $2 AND run_id = ANY ($3::text[]) RETURNING run_id`,
      [nowMs + ttlMs, owner, runIds],
    );
    return new Set(rows.map((r) => r.run_id));
  }

  async release(runId: string, owner: string): Promise<void> {
    await this.table.ensure();
    await this.pool.query(`DELETE FROM ${this.table.name} WHERE run_id = $1 AND owner = $2`, [runId, owner]);
  }

  async holder(runId: string, nowMs: number): Promise<string | undefined> {
    await this.table.ensure();
    const { rows } = await this.pool.query<{ owner: string }>(`SELECT owner FROM ${this.table.name} WHERE run_id = $1 AND expires_at > $2`, [runId, nowMs]);
    return rows[0]?.owner;
  }

  async held(runIds: string[], nowMs: number): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    await this.table.ensure();
    const { rows } = await this.pool.query<{ run_id: string }>(`SELECT run_id FROM ${this.table.name} WHERE run_id = ANY ($1::text[]) AND expires_at > $2`, [runIds, nowMs]);
    return new Set(rows.map((r) => r.run_id));
  }

  async advertise(load: ProcessLoad, ttlMs: number, nowMs: number): Promise<void> {
    await this.processes.ensure();
    // One statement: this process's advert, and the expired ones (crashed processes) cleared.
    await this.pool.query(
      `WITH up AS (
         INSERT INTO ${this.processes.name} (owner, active, cap, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (owner) DO UPDATE SET active = EXCLUDED.active, cap = EXCLUDED.cap, expires_at = EXCLUDED.expires_at
       )
       DELETE FROM ${this.processes.name} WHERE expires_at <= $5 AND owner <> $1`,
      [load.owner, load.active, load.cap, nowMs + ttlMs, nowMs],
    );
  }

  async loads(nowMs: number): Promise<ProcessLoad[]> {
    await this.processes.ensure();
    await this.table.ensure();
    const { rows } = await this.pool.query<{ owner: string; cap: number; active: string }>(
      `SELECT p.owner, p.cap, GREATEST(p.active, (SELECT count(*) FROM ${this.table.name} l WHERE l.owner = p.owner AND l.expires_at > $1)) AS active
       FROM ${this.processes.name} p WHERE p.expires_at > $1`,
      [nowMs],
    );
    return rows.map((r) => ({ owner: r.owner, cap: r.cap, active: Number(r.active) }));
  }

  async withdraw(owner: string): Promise<void> {
    await this.processes.ensure();
    await this.pool.query(`DELETE FROM ${this.processes.name} WHERE owner = $1`, [owner]);
  }

  async close(): Promise<void> {}
}
