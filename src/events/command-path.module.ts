import { Global, Module } from '@nestjs/common';
import type { Clock, Ids } from '../shared/ports';
import { CLOCK, IDS, newProcessId, PROCESS_ID, systemClock, uuidIds } from '../shared/system';
import { CommandPath } from './command-handling';
import { EVENT_STORE, type EventStore } from './event-store/event-store.port';

export const COMMAND_PATH = Symbol('COMMAND_PATH');

/** The clock, ids and process identity every module decides with, and the one path events are written by. */
@Global()
@Module({
  providers: [
    { provide: CLOCK, useValue: systemClock },
    { provide: IDS, useValue: uuidIds },
    { provide: PROCESS_ID, useFactory: newProcessId },
    {
      provide: COMMAND_PATH,
      inject: [EVENT_STORE, PROCESS_ID, IDS, CLOCK],
      useFactory: (store: EventStore, processId: string, ids: Ids, clock: Clock) => new CommandPath(store, processId, ids, clock),
    },
  ],
  exports: [CLOCK, IDS, PROCESS_ID, COMMAND_PATH],
})
export class CommandPathModule {}
