import { EsdbConnection } from '../../../src/events/esdb.client';
import { EsdbLiveChannel } from '../../../src/events/live-channel/esdb.live-channel';
import { PostgresLiveChannel } from '../../../src/events/live-channel/postgres.live-channel';
import { openPostgresPool } from '../../../src/events/postgres.database';
import type { LiveChannel } from '../../../src/events/live-channel/live-channel.port';
import { LiveRelay, type LiveDelta } from '../../../src/team/live/live-relay';
import { esdbTarget, freshNamespace, type EsdbTarget } from '../../support/esdb';
import { randomBytes } from 'node:crypto';
import { freshSchema, PG_URL, withClient } from '../../support/pg';
import { waitFor } from '../../support/wait-for';

// Live model text between two processes (two connections here), through each store's channel:
// what one relay publishes reaches the other when it watches the run, in order, and never comes
// back to the sender.

interface Harness {
  open(): LiveChannel;
  cleanup(): Promise<void>;
}

function liveChannelContract(name: string, harness: () => Promise<Harness>): void {
  describe(`live channel: ${name}`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await harness();
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it('given two processes listening, when one publishes deltas, then the other gets them all in order and the sender none', async () => {
      const got = { A: [] as LiveDelta[], B: [] as LiveDelta[] };
      const a = new LiveRelay(h.open(), 'A', (d) => got.A.push(d));
      const b = new LiveRelay(h.open(), 'B', (d) => got.B.push(d));
      try {
        await a.start();
        await b.start();
        b.watch('run_probe');
        b.watch('run_live');
        const sent: LiveDelta[] = Array.from({ length: 30 }, (_, i) => ({ runId: 'run_live', role: 'executor', turn: i, text: `piece ${i} é😀 ` }));
        // The subscription may need a moment to be live: publish until B hears something, then the rest.
        await waitFor('the channel live', async () => {
          a.publish({ runId: 'run_probe', role: 'architect', turn: 0, text: 'probe' });
          return got.B.length > 0;
        }, 20_000, 100);
        for (const d of sent) a.publish(d);
        await waitFor('every delta relayed', async () => got.B.filter((d) => d.runId === 'run_live').length === sent.length, 20_000, 20);
        expect(got.B.filter((d) => d.runId === 'run_live')).toEqual(sent);
        expect(got.A).toEqual([]);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

liveChannelContract('postgres', async () => {
  const schema = freshSchema('triad_live');
  const pool = openPostgresPool({ url: PG_URL, poolSize: 2 });
  const channels: LiveChannel[] = [];
  return {
    open: () => {
      const c = new PostgresLiveChannel(pool, PG_URL, schema);
      channels.push(c);
      return c;
    },
    cleanup: async () => {
      for (const c of channels) await c.close();
      await pool.end();
    },
  };
});

describe('live channel: postgres, a channel per run', () => {
  const schema = freshSchema('triad_live');
  const pool = openPostgresPool({ url: PG_URL, poolSize: 2 });
  afterAll(() => pool.end());

  /** A channel whose listening connection carries `name`, so a test can find and drop it. */
  const open = (name: string) => {
    const url = new URL(PG_URL);
    url.searchParams.set('application_name', name);
    return new PostgresLiveChannel(pool, url.toString(), schema);
  };
  const message = (runId: string, n: number) => ({ runId, message: `${runId}#${n}` });

  it('given a process watching one run, when another publishes two runs, then it receives the watched run only, also after its connection is replaced', async () => {
    const name = `triad_live_test_${randomBytes(4).toString('hex')}`;
    const sender = open(`${name}_sender`);
    const watcher = open(name);
    const got: string[] = [];
    // The sender sends a run's text only once it has heard that someone else watches the run;
    // `run_other` it also sends, as a third process watches it.
    const third = open(`${name}_third`);
    try {
      await sender.listen(() => undefined);
      await watcher.listen((m) => got.push(m));
      await third.listen(() => undefined);
      await third.watch('run_other');
      await watcher.watch('run_watched');
      // One sender, one transaction each: the watched run's message comes after the other's, so
      // once it arrived, the other's would have too, had it been sent to this connection.
      let n = 0;
      const sendBoth = () => sender.publish([message('run_other', ++n), message('run_watched', n)]);
      await waitFor('the watched run', async () => {
        await sendBoth();
        return got.length > 0;
      }, 10_000, 20);
      expect(got.every((m) => m.startsWith('run_watched#'))).toBe(true);

      // The listening connection dies: the replacement listens to the watched run again.
      await withClient((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]));
      await waitFor('the watched run, after the reconnect', async () => {
        await sendBoth();
        return got.length > 1;
      }, 20_000, 100);
      expect(got.every((m) => m.startsWith('run_watched#'))).toBe(true);

      // Not watched any more: nothing more of it.
      await watcher.unwatch('run_watched');
      await watcher.watch('run_probe');
      const before = got.length;
      await waitFor('the probe', async () => {
        await sender.publish([message('run_watched', ++n), message('run_probe', n)]);
        return got.length > before;
      }, 10_000, 20);
      expect(got.slice(before).every((m) => m.startsWith('run_probe#'))).toBe(true);
    } finally {
      await sender.close();
      await watcher.close();
      await third.close();
    }
  });
});

describe('live channel: postgres, text only of runs another process watches', () => {
  const schema = freshSchema('triad_live');
  const pool = openPostgresPool({ url: PG_URL, poolSize: 2 });
  afterAll(() => pool.end());

  /** A channel on a pool that counts the statements that send text. */
  const counted = () => {
    const sent = { statements: 0 };
    const spy = Object.create(pool) as typeof pool;
    spy.query = ((...args: Parameters<typeof pool.query>) => {
      if (String(args[0]).includes('m.channel, m.message')) sent.statements++;
      return (pool.query as (...a: unknown[]) => unknown)(...args);
    }) as typeof pool.query;
    return { channel: new PostgresLiveChannel(spy, PG_URL, schema), sent };
  };
  const text = (runId: string, n: number) => [{ runId, message: `${runId}#${n}` }];

  it('given no other process watches a run, when its text is published, then nothing is sent; while one watches it is, and once it lets go not any more', async () => {
    const { channel: sender, sent } = counted();
    const watcher = new PostgresLiveChannel(pool, PG_URL, schema);
    const got: string[] = [];
    try {
      await sender.listen(() => undefined);
      await watcher.listen((m) => got.push(m));
      // Watched by the sender itself only: its own watchers get the text without the channel.
      await sender.watch('run_solo');
      await sender.publish(text('run_solo', 0));
      expect(sent.statements).toBe(0);

      await watcher.watch('run_solo');
      let n = 0;
      await waitFor('the text relayed', async () => {
        await sender.publish(text('run_solo', ++n));
        return got.length > 0;
      }, 10_000, 20);
      expect(sent.statements).toBeGreaterThan(0);

      await watcher.unwatch('run_solo');
      await waitFor('the sender hearing of the unwatch', async () => {
        const before = sent.statements;
        await sender.publish(text('run_solo', ++n));
        return sent.statements === before;
      }, 10_000, 20);
    } finally {
      await sender.close();
      await watcher.close();
    }
  });

  it('given a process already watching a run, when a publisher starts later, then it learns of the watch at once and relays the text', async () => {
    const watcher = new PostgresLiveChannel(pool, PG_URL, schema);
    const got: string[] = [];
    const { channel: late, sent } = counted();
    try {
      await watcher.listen((m) => got.push(m));
      await watcher.watch('run_early');
      await late.listen(() => undefined);
      let n = 0;
      // Well before the 10 s refresh: the late publisher's hello made the watcher say it again.
      const started = Date.now();
      await waitFor('the text relayed', async () => {
        await late.publish(text('run_early', ++n));
        return got.length > 0;
      }, 9_000, 20);
      expect(Date.now() - started).toBeLessThan(9_000);
      expect(sent.statements).toBeGreaterThan(0);
    } finally {
      await late.close();
      await watcher.close();
    }
  });
});

liveChannelContract('esdb', async () => {
  const target: EsdbTarget = await esdbTarget();
  const namespace = freshNamespace();
  const conns: EsdbConnection[] = [];
  return {
    open: () => {
      const conn = new EsdbConnection(target.url);
      conns.push(conn);
      return new EsdbLiveChannel(conn, namespace);
    },
    cleanup: async () => {
      for (const c of conns) await c.close();
      await target.stop();
    },
  };
});
