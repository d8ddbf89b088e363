import { checkpointJson, type Checkpoint } from './checkpoint';
import type { CheckpointStore } from './checkpoint-store.port';
import { parseCheckpointText } from './stored-checkpoint';

/** Keeps checkpoints as JSON round trips, so tests behave like the durable stores. */
export class InMemoryCheckpointStore implements CheckpointStore {
  private readonly rows = new Map<string, string>();
  private readonly revisions = new Map<string, number>();

  async save(cp: Checkpoint): Promise<void> {
    if ((this.revisions.get(cp.runId) ?? -1) > cp.revision) return;
    this.revisions.set(cp.runId, cp.revision);
    this.rows.set(cp.runId, checkpointJson(cp));
  }

  async latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined> {
    const row = this.rows.get(runId);
    return row === undefined ? undefined : parseCheckpointText(row);
  }

  /** Test hook: replace the stored text (to simulate corruption). */
  overwrite(runId: string, text: string): void {
    this.rows.set(runId, text);
  }

  async close(): Promise<void> {}
}
