import { Controller, Get, Inject, Param } from '@nestjs/common';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { loadReviewView } from '../load-review-view';
import type { ReviewView } from '../review-view';

/**
 * `GET /v1/reviews/:id`: one review with its whole history, for any signed-in role (anyone may read
 * a run's events); whether the caller may decide it, and why not, is part of the answer.
 */
@Controller('v1/reviews')
export class ReviewViewController {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  @Get(':id')
  one(@Param('id') id: string, @CurrentIdentity() who: Identity): Promise<ReviewView> {
    return loadReviewView(this.store, id, who);
  }
}
