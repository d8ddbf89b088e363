import Database from 'better-sqlite3';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { spawnHttpServer, type ServerChild } from '../support/http-server-child';
import { dropSchema, freshSchema, PG_URL } from '../support/pg';
import { tempDir } from '../support/temp-dir';

/**
 * The real app for the route fuzz suite, on SQLite or PostgreSQL, plus a direct look at its store
 * (head position, decision records) so a test can prove a refused request wrote nothing.
 */

export const FUZZ_KEYS = {
  op: 'fuzz-op-secret-0123456789',
  rev: 'fuzz-rev-secret-0123456789',
  aud: 'fuzz-aud-secret-0123456789',
  adm: 'fuzz-adm-secret-0123456789',
} as const;
export type FuzzKey = keyof typeof FUZZ_KEYS;

export type StoreKind = 'sqlite' | 'postgres';

/** What the store holds: any write moves one of these. */
export interface StoreSnapshot {
  head: number;
  decisions: number;
}

export interface FuzzApp {
  kind: StoreKind;
  url: string;
  readonly stderr: string;
  snapshot(): Promise<StoreSnapshot>;
  close(): Promise<void>;
}

export async function startFuzzApp(kind: StoreKind): Promise<FuzzApp> {
  const dir = tempDir(`triad-fuzz-${kind}-`);
  const dataDir = join(dir.path, 'data');
  const schema = kind === 'postgres' ? freshSchema('triad_fuzz') : undefined;
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('TRIAD_') || k.startsWith('ANTHROPIC_')) delete env[k];
  Object.assign(env, {
    TRIAD_DATA_DIR: dataDir,
    TRIAD_STORE: kind,
    TRIAD_MODEL: 'offline',
    // The fuzz sends wrong keys on purpose among its requests: the failed-authentication limit
    // (tested in edge.e2e.spec.ts) would otherwise refuse the rest of its requests 429.
    TRIAD_AUTH_FAILURES_PER_WINDOW: '1000000',
    TRIAD_API_KEYS: `op:operator:${FUZZ_KEYS.op},rev:reviewer:${FUZZ_KEYS.rev},aud:auditor:${FUZZ_KEYS.aud},adm:admin:${FUZZ_KEYS.adm}`,
    ...(schema ? { TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: schema } : {}),
  });
  let server: ServerChild | undefined;
  let pg: Client | undefined;
  let sqlite: Database.Database | undefined;
  const cleanup = async () => {
    sqlite?.close();
    await pg?.end().catch(() => undefined);
    await server?.stop();
    if (schema) await dropSchema(schema);
    dir.remove();
  };
  try {
    server = await spawnHttpServer(env, { startTimeoutMs: 30_000, graceMs: 5000 });
    if (schema) {
      pg = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
      await pg.connect();
    } else {
      sqlite = new Database(join(dataDir, 'triad.db'), { readonly: true, fileMustExist: true });
    }
  } catch (err) {
    await cleanup();
    throw err;
  }
  const s = schema ? `"${schema}".` : '';
  const query = async (sql: string): Promise<number> => {
    if (pg) return Number((await pg.query<{ n: string }>(sql)).rows[0].n);
    return Number((sqlite!.prepare(sql).get() as { n: number | null }).n);
  };
  return {
    kind,
    url: server.url,
    get stderr() {
      return server!.stderr;
    },
    snapshot: async () => ({
      head: await query(`SELECT coalesce(max(position), 0) AS n FROM ${s}events`),
      decisions: await query(`SELECT count(*) AS n FROM ${s}decision_records`),
    }),
    close: cleanup,
  };
}

/** Every `METHOD /path` the controllers declare, read from their decorators. */
export function declaredRoutes(): string[] {
  const root = resolve(__dirname, '..', '..', 'src');
  const files: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.controller.ts')) files.push(p);
    }
  };
  walk(root);
  const routes: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const prefix = /@Controller\((?:'([^']*)')?\)/.exec(text)?.[1] ?? '';
    for (const m of text.matchAll(/@(Get|Post|Put|Patch|Delete)\((?:'([^']*)')?\)/g)) {
      routes.push(`${m[1].toUpperCase()} /${[prefix, m[2]].filter(Boolean).join('/')}`);
    }
  }
  return routes.sort();
}
