import type { Checkpoint } from './checkpoint';

/** Durable storage of checkpoints; the latest per run is what resume uses. */
export interface CheckpointStore {
  save(checkpoint: Checkpoint): Promise<void>;
  /** The newest checkpoint of a run, or undefined. A row that cannot be parsed is returned as `corrupt`. */
  latest(runId: string): Promise<Checkpoint | { corrupt: string } | undefined>;
  close(): Promise<void>;
}

export const CHECKPOINT_STORE = Symbol('CHECKPOINT_STORE');
