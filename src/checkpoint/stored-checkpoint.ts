import type { Checkpoint } from './checkpoint';

/** What the checkpoint store adapters share: reading a stored text back, and the SQL adapters' batches. */

/** A stored checkpoint text: the checkpoint, or why it cannot be one. */
export function parseCheckpointText(text: string): Checkpoint | { corrupt: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { corrupt: `unparseable checkpoint: ${(err as Error).message}` };
  }
  // Valid JSON that is not an object (a string, a number, null) is as unusable as broken JSON.
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { corrupt: 'the checkpoint is not a JSON object' };
  return value as Checkpoint;
}

/** Checkpoints in one batch (one upsert on PostgreSQL, one transaction on SQLite), at most; and their state's JSON, at most (one larger goes alone). */
export const MAX_SAVES_PER_BATCH = 64;
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/** A checkpoint waiting to be saved, with its stored text. */
export interface SavedCheckpoint {
  cp: Checkpoint;
  body: string;
}
