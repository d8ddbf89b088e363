import { existsSync, realpathSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { redactUrl, shownUrl, type TriadConfig } from '../config/config';
import { InvalidRequestError } from '../shared/errors';
import { PG_SCHEMA_NAME, quoteIdent } from '../shared/postgres-tables';
import { openStorage, type Storage, type StorageOptions } from './storage';

/**
 * Where `triad store copy --to <url>` writes:
 * - `sqlite:<dir>`: a data directory, as `TRIAD_DATA_DIR` names one (the database is `<dir>/triad.db`),
 *   so the copy is used by pointing `TRIAD_DATA_DIR` at it;
 * - `postgres://…` or `postgresql://…`: a PostgreSQL database; `?schema=<name>` picks the schema
 *   (default `public`), as `TRIAD_PG_SCHEMA` does;
 * - `esdb://…`, `esdb+discover://…` (also `kurrentdb://`, `kurrentdb+discover://`): EventStoreDB /
 *   KurrentDB, handed to the storage as `TRIAD_ESDB_URL` would be.
 */
export type StoreTarget =
  | { kind: 'sqlite'; dataDir: string }
  | { kind: 'postgres'; url: string; schema: string }
  | { kind: 'esdb'; url: string };

export class InvalidStoreUrlError extends InvalidRequestError {
  override readonly name = 'InvalidStoreUrlError';
}

const ESDB_SCHEMES = ['esdb:', 'esdb+discover:', 'kurrentdb:', 'kurrentdb+discover:'];

export function parseStoreUrl(raw: string, cwd = process.cwd()): StoreTarget {
  const text = raw.trim();
  if (text.startsWith('sqlite:')) {
    // `sqlite:///abs/dir` is read as `/abs/dir`, `sqlite:rel/dir` relative to the working directory.
    let path = text.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '') throw new InvalidStoreUrlError('sqlite: needs a data directory, e.g. sqlite:/var/lib/triad-copy');
    const dataDir = resolve(cwd, path);
    if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
      throw new InvalidStoreUrlError(`sqlite:${path} must name a data directory (the database goes in <dir>/triad.db), not a file`);
    }
    return { kind: 'sqlite', dataDir };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidStoreUrlError(`'${shownUrl(text)}' is not a store URL (sqlite:<dir>, postgres://…, esdb://…)`);
  }
  if (url.protocol === 'postgres:' || url.protocol === 'postgresql:') {
    const schema = url.searchParams.get('schema') ?? 'public';
    if (!PG_SCHEMA_NAME.test(schema)) throw new InvalidStoreUrlError(`schema '${shownUrl(schema)}' is not a valid PostgreSQL schema name`);
    url.searchParams.delete('schema');
    if (!url.hostname && !url.searchParams.get('host')) throw new InvalidStoreUrlError('a postgres:// URL needs a host');
    return { kind: 'postgres', url: url.toString(), schema };
  }
  if (ESDB_SCHEMES.includes(url.protocol)) return { kind: 'esdb', url: text };
  throw new InvalidStoreUrlError(`unknown store URL scheme '${shownUrl(url.protocol)}' (sqlite:<dir>, postgres://…, esdb://…)`);
}


/** The target as printed: passwords redacted, the schema shown. */
export function describeTarget(t: StoreTarget): string {
  switch (t.kind) {
    case 'sqlite':
      return `sqlite:${t.dataDir}`;
    case 'postgres':
      return `${redactUrl(t.url)} (schema ${t.schema})`;
    case 'esdb':
      return redactUrl(t.url);
  }
}

/** The configured store, described as a target, to refuse copying a store onto itself. */
export function sameStore(config: Pick<TriadConfig, 'store' | 'dataDir' | 'pgUrl' | 'pgSchema' | 'esdbUrl'>, t: StoreTarget): boolean {
  if (config.store === 'sqlite' && t.kind === 'sqlite') return realFile(join(config.dataDir, 'triad.db')) === realFile(join(t.dataDir, 'triad.db'));
  if (config.store === 'postgres' && t.kind === 'postgres' && config.pgUrl) {
    return serverOf(config.pgUrl) === serverOf(t.url) && (config.pgSchema ?? 'public') === t.schema;
  }
  return config.store === 'esdb' && t.kind === 'esdb' && config.esdbUrl === t.url;
}

function realFile(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function serverOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return url;
  }
}

/** Opens the target's storage through the same `openStorage` the app uses. */
export function openTarget(t: StoreTarget, options: StorageOptions = {}): Promise<Storage> {
  const config: Pick<TriadConfig, 'store' | 'dataDir' | 'pgUrl' | 'esdbUrl'> =
    t.kind === 'sqlite'
      ? { store: 'sqlite', dataDir: t.dataDir }
      : t.kind === 'postgres'
        ? { store: 'postgres', dataDir: process.cwd(), pgUrl: t.url }
        : { store: 'esdb', dataDir: process.cwd(), esdbUrl: t.url };
  return openStorage(config, { ...options, ...(t.kind === 'postgres' ? { pgSchema: t.schema } : {}) });
}

/**
 * What `--force` does to a target that holds other data, before copying into it from scratch:
 * SQLite — the database file and its WAL are deleted (the directory and anything else in it, run
 * workspaces included, stay); PostgreSQL — the target's schema is dropped with everything in it,
 * which is refused for `public` (a dedicated schema, `?schema=…`, is required); EventStoreDB —
 * refused (events there cannot be erased; use an empty database).
 */
export async function eraseTarget(t: StoreTarget): Promise<void> {
  switch (t.kind) {
    case 'sqlite':
      for (const suffix of ['', '-wal', '-shm']) rmSync(join(t.dataDir, `triad.db${suffix}`), { force: true });
      return;
    case 'postgres': {
      if (t.schema === 'public') {
        throw new InvalidStoreUrlError('--force drops the target schema, which it does not do to public: copy into a schema of its own (postgres://…?schema=name)');
      }
      const client = new Client({ connectionString: t.url, connectionTimeoutMillis: 10_000 });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(t.schema)} CASCADE`);
      } finally {
        await client.end();
      }
      return;
    }
    case 'esdb':
      throw new InvalidStoreUrlError('--force cannot erase an EventStoreDB target: copy into an empty database');
  }
}
