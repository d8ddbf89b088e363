import { InvalidRequestError } from '../../shared/errors';
import type { DecisionOutcome } from '../../team/domain/run-events';
import { normaliseIdentity } from '../../auth/names';
import { DECISION_KINDS, DECISION_OUTCOMES, type DecisionFilter, type DecisionKind } from './decision-record';

/** A filter of the decision log that cannot be applied as given (→ 400, or exit code 2). */
export class InvalidDecisionFilterError extends InvalidRequestError {
  override readonly name = 'InvalidDecisionFilterError';
}

export interface RawDecisionFilter {
  kind?: string;
  runId?: string;
  decider?: string;
  outcome?: string;
  from?: string;
  to?: string;
}

/** A calendar date, or a date and time with a zone (Z or ±hh:mm): never a zone-less local time. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/;

/** An ISO 8601 instant, normalised to the form `decidedAt` has (Date#toISOString, UTC). */
export function parseInstant(name: string, raw: string): string {
  const ms = ISO_TIME.test(raw) && isCalendarDate(raw.slice(0, 10)) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new InvalidDecisionFilterError(`${name} must be an ISO 8601 date or date-time with a zone (e.g. 2025-01-31 or 2025-01-31T12:00:00Z), got '${raw}'`);
  }
  return new Date(ms).toISOString();
}

/** Date.parse rolls 2025-02-30 over to March; a filter date must exist. */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split('-').map(Number);
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** Validates and normalises filters from a query string or the command line. */
export function parseDecisionFilter(raw: RawDecisionFilter): DecisionFilter {
  const filter: DecisionFilter = {};
  for (const key of ['runId', 'decider'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (v.trim() === '' || v.length > 300) throw new InvalidDecisionFilterError(`${key} must be 1 to 300 characters`);
    // Names are case-insensitive: user:ALICE finds user:alice's decisions.
    filter[key] = key === 'decider' ? normaliseIdentity(v) : v;
  }
  if (raw.kind !== undefined) {
    if (!(DECISION_KINDS as readonly string[]).includes(raw.kind)) throw new InvalidDecisionFilterError(`kind must be one of ${DECISION_KINDS.join(', ')}, got '${raw.kind}'`);
    filter.kind = raw.kind as DecisionKind;
  }
  if (raw.outcome !== undefined) {
    if (!(DECISION_OUTCOMES as readonly string[]).includes(raw.outcome)) {
      throw new InvalidDecisionFilterError(`outcome must be one of ${DECISION_OUTCOMES.join(', ')}, got '${raw.outcome}'`);
    }
    filter.outcome = raw.outcome as DecisionOutcome;
  }
  if (raw.from !== undefined) filter.from = parseInstant('from', raw.from);
  if (raw.to !== undefined) filter.to = parseInstant('to', raw.to);
  if (filter.from && filter.to && filter.from > filter.to) throw new InvalidDecisionFilterError('from must not be after to');
  return filter;
}
