import { EsdbConnection } from '../../src/events/esdb.client';
import { EsdbLiveChannel } from '../../src/events/esdb.live-channel';
import { PostgresLiveChannel } from '../../src/events/postgres.live-channel';
import { openPostgresPool } from '../../src/events/postgres.database';
import { LiveRelay, type LiveChannel, type LiveDelta } from '../../src/team/live-relay';
import { esdbTarget, freshNamespace, type EsdbTarget } from '../support/esdb';
import { freshSchema, PG_URL } from '../support/pg';
import { waitFor } from '../support/wait-for';

// Live model text between two processes (two connections here), through each store's channel:
// what one relay publishes reaches the other, in order, and never comes back to the sender.

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
