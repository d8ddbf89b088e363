import { randomUUID } from 'node:crypto';
import { PostgresChannelListener } from '../../../src/events/postgres.listener';
import { PG_URL, withClient } from '../../support/pg';
import { waitFor } from '../../support/wait-for';

// The LISTEN connection of one process, on the real PostgreSQL: a channel added or removed while
// that connection is dying (terminated by the server, its error event not yet seen) is applied by
// the replacement connection, and the change itself does not fail.

const notify = (channel: string, payload: string) => withClient((c) => c.query('SELECT pg_notify($1, $2)', [channel, payload]));

it('given its connection was terminated, when a channel is removed and another added before the loss is noticed, then neither throws and the new connection listens as asked', async () => {
  const app = `triad_listener_${randomUUID().slice(0, 8)}`;
  const [kept, removed, added] = ['kept', 'removed', 'added'].map((c) => `${app}_${c}`);
  const got: string[] = [];
  let listening = 0;
  const url = new URL(PG_URL);
  url.searchParams.set('application_name', app);
  const listener = new PostgresChannelListener(url.toString(), [kept, removed], (payload, channel) => got.push(`${channel}:${payload}`), () => listening++);
  try {
    await listener.start();
    expect(listening).toBe(1);
    await withClient((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [app]));
    // The dead connection is still the current one: the statements go to it and fail there.
    await expect(listener.remove(removed)).resolves.toBeUndefined();
    await expect(listener.add(added)).resolves.toBeUndefined();
    await waitFor('the replacement connection', async () => listening >= 2, 20_000);
    let n = 0;
    await waitFor('a payload on the added channel', async () => {
      n++;
      await notify(removed, `r${n}`);
      await notify(kept, `k${n}`);
      await notify(added, `a${n}`);
      return got.some((g) => g.startsWith(`${added}:`));
    }, 10_000, 50);
    // Sent before the added channel's in the same order: had the removed one been listened to, it would be here.
    expect(got.some((g) => g.startsWith(`${kept}:`))).toBe(true);
    expect(got.some((g) => g.startsWith(`${removed}:`))).toBe(false);
  } finally {
    await listener.close();
  }
});
