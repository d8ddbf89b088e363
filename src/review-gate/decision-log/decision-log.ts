import type { EventStore } from '../../events/event-store.port';
import { expectedDecision, verifyChainAsync, type ChainVerification, type ExpectedDecision } from './chain';
import type { DecisionFilter, DecisionRecord } from './decision-record';
import type { DecisionRecordRepository } from './decision-record.repository';
import { DECISION_EVENTS, type DecisionLogProjection } from './decision-log.projection';

const EVENT_PAGE = 1000;

/**
 * Reading and verifying the decision log. Every read first waits for the projector to reach the
 * store's head, so a client sees the decisions it just made. Framework-free; the HTTP route and
 * the CLI both use it.
 */
export class DecisionLog {
  constructor(
    private readonly store: EventStore,
    private readonly repo: DecisionRecordRepository,
    private readonly projection: DecisionLogProjection,
  ) {}

  async list(filter: DecisionFilter = {}, page: { afterSeq?: number; limit?: number } = {}): Promise<DecisionRecord[]> {
    await this.projection.catchUp();
    return this.repo.list(filter, page);
  }

  /** Every matching record in seq order, page by page (for exports). */
  async export(filter: DecisionFilter = {}, afterSeq?: number): Promise<AsyncIterable<DecisionRecord>> {
    await this.projection.catchUp();
    return this.repo.iterate({ filter, afterSeq });
  }

  /**
   * Verifies the chain and cross-checks it with the store: every decision event up to the
   * projector's position must have exactly its record, in order, with its content. Removing the
   * last records leaves a valid chain; the count of decision events is what reveals it.
   */
  async verify(): Promise<ChainVerification> {
    const caughtUp = await this.projection.catchUp();
    // Records appended after this point (newer decisions) are left out; a record claiming a
    // position the store has not reached is checked, and found to be of no decision event.
    const last = await this.repo.last();
    const upTo = Math.max(caughtUp, typeof last?.position === 'number' ? last.position : 0);
    const byDecisionId = new Map<string, ExpectedDecision>();
    let after = 0;
    for (;;) {
      const page = await this.store.readAll({ after, maxCount: EVENT_PAGE, filter: DECISION_EVENTS });
      for (const e of page) {
        if (e.position > upTo) break;
        const [id, expected] = expectedDecision(e);
        byDecisionId.set(id, expected);
      }
      if (page.length < EVENT_PAGE || page[page.length - 1].position >= upTo) break;
      after = page[page.length - 1].position;
    }
    return verifyChainAsync(this.repo.iterate(), { count: byDecisionId.size, byDecisionId, upToPosition: upTo });
  }
}
