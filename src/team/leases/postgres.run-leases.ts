import type { Pool } from 'pg';
import { LazyPgTable, type TableLogger } from '../../shared/postgres-tables';
import type { ProcessLoad } from '../dispatch/placement';
import type { RunLeases } from './run-leases.port';

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
