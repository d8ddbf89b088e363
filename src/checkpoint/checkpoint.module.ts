import { Module } from '@nestjs/common';
import { TeamModule } from '../team/team.module';

/**
 * Checkpoints: the pure snapshot/restore (checkpoint.ts) and the stores (checkpoint-stores.ts).
 * The store is provided with the run stores (same database as the events) and exported here.
 */
@Module({
  imports: [TeamModule],
  exports: [TeamModule],
})
export class CheckpointModule {}
