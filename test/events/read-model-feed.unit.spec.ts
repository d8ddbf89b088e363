import type { RecordedEvent } from '../../src/events/event-store.port';
import { InMemoryEventStore } from '../../src/events/in-memory.event-store';
import { ReadModelFeed } from '../../src/events/read-model-feed';
import { HealthRegistry } from '../../src/shared/health';
import { waitFor } from '../support/wait-for';

const quiet = { log: () => undefined, error: () => undefined };
const ev = (type: string) => ({ type, data: {} });

describe('ReadModelFeed: one subscription feeding every read model of a process', () => {
  let feeds: ReadModelFeed[] = [];
  afterEach(() => {
    for (const f of feeds) f.close();
    feeds = [];
  });

  function feedOf(store: InMemoryEventStore, health = new HealthRegistry()): ReadModelFeed {
    const feed = new ReadModelFeed(store, health, quiet);
    feeds.push(feed);
    return feed;
  }

  it('given two read models, when the feed catches up, then each got every event once, in order, from one read of the store', async () => {
    const store = new InMemoryEventStore();
    await store.append('run-a', [ev('A1'), ev('A2')]);
    await store.append('project-p', [ev('P1')]);
    let eventsRead = 0;
    const readAll = store.readAll.bind(store);
    store.readAll = async (options) => {
      const page = await readAll(options);
      eventsRead += page.length;
      return page;
    };
    const feed = feedOf(store);
    const runs: number[] = [];
    const projects: number[] = [];
    feed.register('runs', (e) => runs.push(e.position));
    feed.register('projects', (e) => projects.push(e.position));
    feed.start();
    await feed.catchUp();
    expect(runs).toEqual([1, 2, 3]);
    expect(projects).toEqual([1, 2, 3]);
    expect(eventsRead).toBe(3);
  });

  it('given one read model throws on an event, then the failure names it; after the restart it gets that event again, and the other folds nothing twice', async () => {
    const store = new InMemoryEventStore();
    const health = new HealthRegistry();
    await store.append('s', [ev('E1'), ev('E2'), ev('E3')]);
    const feed = feedOf(store, health);
    const first: number[] = [];
    const second: number[] = [];
    let broken = true;
    feed.register('first', (e: RecordedEvent) => first.push(e.position));
    feed.register('second', (e: RecordedEvent) => {
      if (e.position === 2 && broken) throw new Error('a bug in the fold');
      second.push(e.position);
    });
    feed.start();
    await waitFor('the failure to show', async () => health.assess().reasons.includes('projection read-models is failing: second: a bug in the fold'), 10_000);
    await expect(feed.catchUp()).rejects.toThrow('the read models are failing: second: a bug in the fold');
    broken = false;
    await waitFor('the feed to restart', async () => health.assess().ok, 15_000);
    await feed.catchUp();
    expect(first).toEqual([1, 2, 3]);
    expect(second).toEqual([1, 2, 3]);
  });

  it('given a read model registered after the start, then it is refused (it would miss what was folded)', () => {
    const feed = feedOf(new InMemoryEventStore());
    feed.register('runs', () => undefined);
    feed.start();
    expect(() => feed.register('late', () => undefined)).toThrow('read model late registered after the feed started');
  });
});
