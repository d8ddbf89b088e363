import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('in-memory', () => ({
  open: async (o) => new InMemoryEventStore(o),
  cleanup: async () => undefined,
}), { recordedPositions: 'dense' });
