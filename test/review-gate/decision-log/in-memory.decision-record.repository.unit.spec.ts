import { InMemoryDecisionRecordRepository } from '../../../src/review-gate/decision-log/in-memory.decision-record.repository';
import { decisionRecordRepositoryContract } from './decision-record.repository.contract';

decisionRecordRepositoryContract('in-memory', () => {
  // One shared instance stands for "the same database": other writers get the same object.
  const repo = new InMemoryDecisionRecordRepository();
  return { open: async () => repo, openAnother: async () => repo, cleanup: async () => undefined };
});
