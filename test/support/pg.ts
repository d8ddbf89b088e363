import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** No skip when PostgreSQL is down: the PostgreSQL tests fail, so a broken setup cannot pass silently. */
export const PG_URL = process.env.TRIAD_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name of its own for a harness or test (dropped in its cleanup). */
export function freshSchema(prefix = 'triad_test'): string {
  return `${prefix}_${process.pid}_${randomBytes(5).toString('hex')}`;
}

export async function withClient<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export const dropSchema = (schema: string) => withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));

/** A client of its own for a test that inspects the database; a PostgreSQL that does not answer fails the suite, with how to point it elsewhere. */
export async function connectAdmin(): Promise<Client> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new Error(`PostgreSQL at ${PG_URL} is unreachable (${(err as Error).message}): this suite needs it (set TRIAD_PG_URL)`);
  }
}
