import { Module } from '@nestjs/common';
import { TeamModule } from '../team/team.module';

/**
 * Checkpoints: the pure snapshot/restore (checkpoint.ts) and the stores (checkpoint-stores.ts).
 * The store is opened with the rest of the storage, in the events' database (`src/storage/
 * storage.ts`); TeamModule provides CHECKPOINT_STORE from it, exported here.
 */
@Module({
  imports: [TeamModule],
  exports: [TeamModule],
})
export class CheckpointModule {}
