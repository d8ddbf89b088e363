import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { openStorage, type Storage } from '../../src/storage/storage';
import { tempDir } from '../support/temp-dir';
import { PG_URL } from '../support/pg';

/**
 * acknowledged appends survive `kill -9`. A child process appends in a loop and prints
 * each event id once its append resolved; the test SIGKILLs it mid-stream, reopens the store and
 * checks that every acknowledged event is there exactly once, with no holes in the order.
 */

const APPENDER = join(__dirname, '..', 'support', 'durable-appender.js');
/** Acknowledged events before each kill: a few hundred, different each round. */
const KILL_AFTER = [180, 410, 290];

interface Target {
  env: Record<string, string>;
  open(): Promise<Storage>;
}

describe.each([
  ['sqlite', sqliteTarget],
  ['postgres', postgresTarget],
] as const)('durability under kill -9: %s', (_name, makeTarget) => {
  let target: Target & { cleanup(): Promise<void> };

  beforeAll(() => {
    target = makeTarget();
  });

  afterAll(async () => {
    await target.cleanup();
  });

  it('every acknowledged append survives, exactly once, with contiguous revisions and positions', async () => {
    const acknowledged: string[] = [];
    for (const [round, killAfter] of KILL_AFTER.entries()) {
      const acked = await appendUntilKilled({ ...target.env, ROUND: `r${round}` }, killAfter);
      expect(acked.length).toBeGreaterThanOrEqual(killAfter);
      acknowledged.push(...acked);

      const storage = await target.open();
      try {
        const all = await storage.events.readAll();
        assertIntact(all);
        const stored = new Set(all.map((e) => e.id));
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
        // Nothing from a later round can exist yet, and each round only adds events.
        expect(all.every((e) => Number(e.id.slice(1, e.id.indexOf('-'))) <= round)).toBe(true);
      } finally {
        await storage.close();
      }
    }
  }, 60_000);
});

function assertIntact(all: RecordedEvent[]): void {
  expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
  expect(all.map((e) => e.position)).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
  const next = new Map<string, number>();
  for (const e of all) {
    expect(e.revision).toBe(next.get(e.streamId) ?? 0);
    next.set(e.streamId, e.revision + 1);
  }
}

/**
 * Starts the appender and SIGKILLs it once `killAfter` ids have been acknowledged, a random
 * moment later so the kill lands inside whatever append is running. Resolves with every id the
 * child printed (each printed only after its append resolved).
 */
function appendUntilKilled(env: Record<string, string>, killAfter: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [APPENDER], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const ids: string[] = [];
    let partial = '';
    let stderr = '';
    let killing = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line && line !== 'ready') ids.push(line);
      if (!killing && ids.length >= killAfter) {
        killing = true;
        setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 5));
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (signal === 'SIGKILL') resolve(ids);
      else reject(new Error(`appender exited with ${code} before it was killed: ${stderr}`));
    });
  });
}

function sqliteTarget(): Target & { cleanup(): Promise<void> } {
  const dir = tempDir();
  return {
    env: { TRIAD_STORE: 'sqlite', TRIAD_DATA_DIR: dir.path },
    open: () => openStorage({ store: 'sqlite', dataDir: dir.path }),
    cleanup: async () => dir.remove(),
  };
}

function postgresTarget(): Target & { cleanup(): Promise<void> } {
  const schema = `triad_durability_${process.pid}_${randomBytes(5).toString('hex')}`;
  return {
    env: { TRIAD_STORE: 'postgres', TRIAD_PG_URL: PG_URL, TRIAD_PG_SCHEMA: schema, TRIAD_DATA_DIR: '/nonexistent' },
    open: () => openStorage({ store: 'postgres', dataDir: '/nonexistent', pgUrl: PG_URL }, { pgSchema: schema }),
    cleanup: async () => {
      const client = new Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}
