import { randomUUID } from 'node:crypto';
import type { EsdbConnection, EsdbRecord } from '../events/esdb.client';
import { checkpointJson, type Checkpoint } from './checkpoint';
import type { CheckpointStore } from './checkpoint-store.port';
import { parseCheckpointText } from './stored-checkpoint';

/** Checkpoints kept per run on the server (older ones are dropped by its scavenge). */
const KEEP = 2;
const CONFLICT_RETRIES = 5;

/**
 * EventStoreDB: a run's checkpoints are the events of one stream, `<ns>.checkpoint-<runId>`; the
 * latest is its last event. A save reads the last one and appends after it at that expected
 * revision, so an older revision never replaces a newer one even with several writers; the
 * stream keeps its last two (`$maxCount`). A checkpoint is one event, so it must fit the server's
 * largest append (`MaxAppendSize`, 1 MiB by default): a larger one fails to save, which only
 * warns (the run is then replayed from its events).
 */
export class EsdbCheckpointStore implements CheckpointStore {
  constructor(
    private readonly conn: EsdbConnection,
    private readonly namespace: string,
  ) {}

  stream(runId: string): string {
    return `${this.namespace}.checkpoint-${runId}`;
  }

  async save(cp: Checkpoint): Promise<void> {
    const stream = this.stream(cp.runId);
    const body = Buffer.from(checkpointJson(cp), 'utf8');
    for (let attempt = 0; attempt < CONFLICT_RETRIES; attempt++) {
      const last = await this.last(stream);
      if (last && revisionOf(last) > cp.revision) return;
      const outcome = await this.conn.append(
        stream,
        [{ id: randomUUID(), type: 'RunCheckpoint', data: body, metadata: Buffer.from(JSON.stringify({ revision: cp.revision })) }],
        last ? last.revision : 'no_stream',
      );
      if (outcome.ok) {
        if (!last) await this.conn.keepLast(stream, KEEP);
        return;
      }
    }
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    const last = await this.last(this.stream(runId));
    return last ? parseCheckpointText(Buffer.from(last.data).toString('utf8')) : undefined;
  }

  async close(): Promise<void> {}

  private async last(stream: string): Promise<EsdbRecord | undefined> {
    const [last] = await this.conn.readStream(stream, 'end', { direction: 'backwards', maxCount: 1 });
    return last;
  }
}

function revisionOf(r: EsdbRecord): number {
  const m = r.metadata as { revision?: unknown } | undefined;
  return typeof m?.revision === 'number' ? m.revision : -1;
}
