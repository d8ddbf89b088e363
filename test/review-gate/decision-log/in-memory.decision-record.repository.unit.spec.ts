import { InMemoryDecisionRecordRepository } from '../../../src/review-gate/decision-log/in-memory.decision-record.repository';
import { decisionRecordRepositoryContract } from './decision-record.repository.contract';

/** How this suite builds the adapter. */
const makeAdapter = () => new InMemoryDecisionRecordRepository();

decisionRecordRepositoryContract('in-memory', () => {
  // One shared instance stands for "the same database": other writers get the same object.
  const repo = makeAdapter();
  return { open: async () => repo, openAnother: async () => repo, cleanup: async () => undefined };
});
