import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { modelLabelOf } from '../team/domain/pricing';
import type { HealthFigures } from '../shared/health';
import type { HeartbeatFigures } from '../team/leases/lease-heartbeat';
import { tokenCountTally } from '../team/models/token-count';

/**
 * The process's Prometheus metrics (prom-client), framework-free so unit tests load it. Three kinds
 * of source feed it:
 * - the events this process's drivers record (`observeRunEvents`): model turns, tokens, cost,
 *   call latency, model errors and retries — counted once, where they are recorded;
 * - read models and components, read at scrape time (`use(sources)`): runs by status, pending
 *   reviews and approvals, the decision log projector, the store head, drivers, placements, the
 *   health registry's and the lease heartbeat's counts;
 * - the HTTP layer and the store adapter, timed as they work (`observeHttp`, `observeAppend`).
 * Labels are bounded sets (role, model, kind, status, route pattern): never a run, review or
 * request id.
 *
 * One file over 400 lines on purpose: the whole metric catalogue (every name, help text, labels
 * and source) in one registry, so /metrics and docs/OPERATIONS.md's table are read against one place.
 */

/** What a run event looks like to the metrics: its type and data. */
export interface MetricEvent {
  type: string;
  data: unknown;
}

export interface PendingItem {
  /** ISO time it has been waiting since. */
  since: string;
}

/** Read at each scrape; each is optional (a part that is not there is left out). */
export interface MetricSources {
  runStatuses?: () => Iterable<string>;
  pendingReviews?: () => PendingItem[];
  pendingApprovals?: () => PendingItem[];
  activeDrivers?: () => number;
  /** Launches placed by this process, by placement (take, hand, queue). */
  placements?: () => Readonly<Record<string, number>>;
  /** Runs this process drives at most at once. */
  maxActiveRuns?: () => number;
  headPosition?: () => Promise<number | undefined>;
  decisionLog?: () => Promise<DecisionLogLag | undefined>;
  /** Store errors, restarts and projection positions (the health registry). */
  health?: () => HealthFigures;
  /** Lease renewals, failures, losses and delays (the lease heartbeat). */
  leaseHeartbeat?: () => HeartbeatFigures;
  /** Whether a tool name is one this process has: other names a model calls are counted as `other`. */
  knownTool?: (name: string) => boolean;
}

export interface DecisionLogLag {
  /** Decision events in the store not yet in the log (counted up to 1,000). */
  events: number;
  /** Age of the oldest of them (0 when none). */
  seconds: number;
  failing: boolean;
  failures: number;
}

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

interface ModelCallData {
  role: string;
  model: string;
  usage?: { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number };
  costUsd?: number;
  durationMs?: number;
}

export class TriadMetrics {
  readonly registry = new Registry();
  private sources: MetricSources = {};

  private readonly turns: Counter<'role' | 'model'>;
  private readonly tokens: Counter<'role' | 'model' | 'type'>;
  private readonly cost: Counter<'role' | 'model'>;
  private readonly callSeconds: Histogram<'role' | 'model'>;
  private readonly modelErrors: Counter<'kind'>;
  private readonly modelRetries: Counter<'kind'>;
  private readonly toolCalls: Counter<'tool' | 'outcome'>;
  private readonly appendSeconds: Histogram<'store' | 'outcome'>;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpSeconds: Histogram<'method' | 'route'>;
  private readonly sseOpen: Gauge;
  private readonly edgeRefusals: Counter<'reason'>;
  private readonly authFailures: Counter<'outcome'>;
  private readonly webhookDeliveries: Counter<'outcome'>;

  constructor(options: { now?: () => number; defaultMetrics?: boolean } = {}) {
    const now = options.now ?? Date.now;
    const r = this.registry;
    // Process and Node series (CPU, memory, handles, GC, event-loop lag `nodejs_eventloop_lag_*`).
    if (options.defaultMetrics !== false) {
      collectDefaultMetrics({ register: r });
      // Gauges named like counters (promtool refuses them); `nodejs_active_handles{type}` and
      // friends carry the same counts.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) r.removeSingleMetric(name);
    }
    const sources = () => this.sources;
    const ageSeconds = (items: PendingItem[]) => {
      const oldest = Math.min(...items.map((i) => Date.parse(i.since)).filter((t) => Number.isFinite(t)));
      return Number.isFinite(oldest) ? Math.max(0, (now() - oldest) / 1000) : 0;
    };

    new Gauge({
      name: 'triad_runs',
      help: 'Runs by status, from the runs read model.',
      labelNames: ['status'],
      registers: [r],
      collect() {
        const list = sources().runStatuses;
        if (!list) return;
        this.reset();
        const byStatus = new Map<string, number>();
        for (const s of list()) byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
        for (const [status, n] of byStatus) this.set({ status }, n);
      },
    });
    new Gauge({
      name: 'triad_active_drivers',
      help: 'Runs driven by this process now.',
      registers: [r],
      collect() {
        this.set(sources().activeDrivers?.() ?? 0);
      },
    });
    // The components' own counts, each read at scrape time; a series whose part is not there is left as it was.
    const counted = (name: string, help: string, read: () => number | undefined) =>
      new Counter({
        name,
        help,
        registers: [r],
        collect() {
          const n = read();
          if (n === undefined) return;
          this.reset();
          this.inc(n);
        },
      });
    const gauged = (name: string, help: string, read: () => number | undefined) =>
      new Gauge({
        name,
        help,
        registers: [r],
        collect() {
          const n = read();
          if (n !== undefined) this.set(n);
        },
      });
    type ByLabel = () => ReadonlyArray<readonly [string, number]> | undefined;
    const countedBy = (name: string, help: string, label: string, read: ByLabel) =>
      new Counter({
        name,
        help,
        labelNames: [label],
        registers: [r],
        collect() {
          const entries = read();
          if (!entries) return;
          this.reset();
          for (const [value, n] of entries) this.inc({ [label]: value }, n);
        },
      });
    const gaugedBy = (name: string, help: string, label: string, read: ByLabel) =>
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers: [r],
        collect() {
          const entries = read();
          if (!entries) return;
          this.reset();
          for (const [value, n] of entries) this.set({ [label]: value }, n);
        },
      });
    const health = () => sources().health?.();
    const heartbeat = () => sources().leaseHeartbeat?.();
    counted('triad_store_errors_total', 'Store operations that failed to reach the store.', () => health()?.storeErrors);
    countedBy('triad_restarts_total', 'Restarts after a failure, by component.', 'component', () => health()?.restarts);
    gaugedBy('triad_projection_position', 'Global position folded by each projection.', 'projection', () => health()?.projectionPositions);
    counted('triad_lease_renewals_total', "Lease heartbeats that renewed this process's leases.", () => heartbeat()?.renewals);
    counted('triad_lease_renewal_failures_total', 'Lease heartbeats the store did not answer.', () => heartbeat()?.renewalFailures);
    counted('triad_leases_lost_total', 'Leases found taken by another process (its driver here stopped).', () => heartbeat()?.leasesLost);
    gauged('triad_lease_heartbeat_delay_max_seconds', 'Longest delay of a lease heartbeat past its planned time.', () => heartbeat()?.heartbeatDelayMaxSeconds);
    gauged('triad_event_loop_delay_max_seconds', 'Longest event-loop delay seen since drivers started.', () => heartbeat()?.eventLoopDelayMaxSeconds);
    countedBy(
      'triad_runs_placed_total',
      'Runs launched through this process, by placement: driven here, handed to another process, or queued (every process at its cap).',
      'placement',
      () => {
        const placed = sources().placements?.();
        return placed && Object.entries(placed);
      },
    );
    gauged('triad_max_active_runs', 'Runs this process drives at most at once (TRIAD_MAX_ACTIVE_RUNS).', () => sources().maxActiveRuns?.());

    new Gauge({
      name: 'process_uptime_seconds',
      help: 'Process uptime.',
      registers: [r],
      collect() {
        this.set(Math.round(process.uptime()));
      },
    });

    this.turns = new Counter({ name: 'triad_model_turns_total', help: 'Model turns completed, by role and model.', labelNames: ['role', 'model'], registers: [r] });
    this.tokens = new Counter({
      name: 'triad_model_tokens_total',
      help: 'Tokens of completed model turns, by role, model and type (input, output, cache_read, cache_write).',
      labelNames: ['role', 'model', 'type'],
      registers: [r],
    });
    this.cost = new Counter({ name: 'triad_model_cost_usd_total', help: 'Cost of completed model turns in US dollars, by role and model.', labelNames: ['role', 'model'], registers: [r] });
    this.callSeconds = new Histogram({
      name: 'triad_model_call_duration_seconds',
      help: 'Duration of completed model calls, by role and model.',
      labelNames: ['role', 'model'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.modelErrors = new Counter({ name: 'triad_model_errors_total', help: 'Failed model calls, by failure kind.', labelNames: ['kind'], registers: [r] });
    this.modelRetries = new Counter({ name: 'triad_model_retries_total', help: 'Failed model calls that are retried, by failure kind.', labelNames: ['kind'], registers: [r] });
    new Counter({
      name: 'triad_token_counts_total',
      help: 'Token counts before model calls: asked of the provider (ok or failed, then the estimate decided) or skipped (the estimate was far from the limit).',
      labelNames: ['outcome'],
      registers: [r],
      collect() {
        this.reset();
        this.inc({ outcome: 'ok' }, tokenCountTally.ok);
        this.inc({ outcome: 'failed' }, tokenCountTally.failed);
        this.inc({ outcome: 'skipped' }, tokenCountTally.skipped);
      },
    });
    this.toolCalls = new Counter({ name: 'triad_tool_calls_total', help: 'Tool calls completed, by tool and outcome (ok, error, unknown).', labelNames: ['tool', 'outcome'], registers: [r] });
    this.appendSeconds = new Histogram({
      name: 'triad_store_append_duration_seconds',
      help: 'Duration of event store appends, by store and outcome (ok, error).',
      labelNames: ['store', 'outcome'],
      buckets: APPEND_BUCKETS,
      registers: [r],
    });

    const pending = (name: string, help: string, read: () => PendingItem[] | undefined, age: boolean) =>
      new Gauge({
        name,
        help,
        registers: [r],
        collect() {
          const items = read() ?? [];
          this.set(age ? ageSeconds(items) : items.length);
        },
      });
    pending('triad_reviews_pending', 'Human reviews waiting for a decision.', () => sources().pendingReviews?.(), false);
    pending('triad_reviews_oldest_pending_age_seconds', 'How long the oldest pending review has waited (0 when none).', () => sources().pendingReviews?.(), true);
    pending('triad_approvals_pending', 'Tool calls waiting for a human approval.', () => sources().pendingApprovals?.(), false);
    pending('triad_approvals_oldest_pending_age_seconds', 'How long the oldest pending tool approval has waited (0 when none).', () => sources().pendingApprovals?.(), true);

    // The decision log projector, read once per scrape for its four series.
    let lag: Promise<DecisionLogLag | undefined> | undefined;
    // A projector that cannot say its lag omits its series from this scrape; its faults are in /health and the log.
    const decisionLog = () => (lag ??= (sources().decisionLog?.() ?? Promise.resolve(undefined)).catch(() => undefined).finally(() => setImmediate(() => (lag = undefined))));
    const fromLog = (name: string, help: string, pick: (l: DecisionLogLag) => number) =>
      new Gauge({
        name,
        help,
        registers: [r],
        // Kept at the last value read while the store does not answer.
        async collect() {
          const l = await decisionLog();
          if (l) this.set(pick(l));
        },
      });
    fromLog('triad_decision_log_lag_events', 'Decision events in the store not yet in the decision log (counted up to 1000).', (l) => l.events);
    fromLog('triad_decision_log_lag_seconds', 'Age of the oldest decision event not yet in the decision log (0 when none).', (l) => l.seconds);
    fromLog('triad_decision_log_projector_failing', '1 while the decision log projector is failing (it restarts by itself).', (l) => (l.failing ? 1 : 0));
    new Counter({
      name: 'triad_decision_log_projector_failures_total',
      help: 'Failures of the decision log projector (each followed by a restart).',
      registers: [r],
      async collect() {
        const l = await decisionLog();
        if (!l) return;
        this.reset();
        this.inc(l.failures);
      },
    });

    this.httpRequests = new Counter({
      name: 'triad_http_requests_total',
      help: 'HTTP requests by method, route pattern (`unmatched` when no route took it) and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [r],
    });
    this.httpSeconds = new Histogram({
      name: 'triad_http_request_duration_seconds',
      help: 'HTTP request duration by method and route pattern (event streams: until closed).',
      labelNames: ['method', 'route'],
      buckets: HTTP_BUCKETS,
      registers: [r],
    });
    this.sseOpen = new Gauge({ name: 'triad_sse_streams_open', help: 'Open event streams (text/event-stream).', registers: [r] });
    this.edgeRefusals = new Counter({
      name: 'triad_http_refusals_total',
      help: 'Requests refused at the edge, before routing: host (not an allowed host), no_host, body_too_large (declared Content-Length), expect_too_large (Expect: 100-continue), timeout (headers or body too slow).',
      labelNames: ['reason'],
      registers: [r],
    });
    this.authFailures = new Counter({
      name: 'triad_auth_failures_total',
      help: 'Failed authentications (outcome failed: a wrong key or session) and requests refused 429 because their address failed too often (outcome limited).',
      labelNames: ['outcome'],
      registers: [r],
    });
    this.webhookDeliveries = new Counter({
      name: 'triad_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (a 2xx acknowledged it), retried (failed, tried again later), failed (given up on).',
      labelNames: ['outcome'],
      registers: [r],
    });
    for (const outcome of ['delivered', 'retried', 'failed']) this.webhookDeliveries.inc({ outcome }, 0);
  }

  observeWebhookDelivery(outcome: 'delivered' | 'retried' | 'failed'): void {
    this.webhookDeliveries.inc({ outcome });
  }

  observeEdgeRefusal(reason: string): void {
    this.edgeRefusals.inc({ reason });
  }

  observeAuthFailure(outcome: 'failed' | 'limited'): void {
    this.authFailures.inc({ outcome });
  }

  /** The parts read at scrape time (merged with those given before). */
  use(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** Events a local driver recorded. */
  observeRunEvents(events: readonly MetricEvent[]): void {
    for (const e of events) {
      switch (e.type) {
        case 'ModelCallCompleted': {
          const d = e.data as ModelCallData;
          const labels = { role: d.role, model: modelLabelOf(d.model) };
          this.turns.inc(labels);
          const u = d.usage ?? {};
          this.tokens.inc({ ...labels, type: 'input' }, amount(u.inputTokens));
          this.tokens.inc({ ...labels, type: 'output' }, amount(u.outputTokens));
          this.tokens.inc({ ...labels, type: 'cache_read' }, amount(u.cacheReadTokens));
          this.tokens.inc({ ...labels, type: 'cache_write' }, amount(u.cacheWriteTokens));
          this.cost.inc(labels, amount(d.costUsd));
          if (typeof d.durationMs === 'number') this.callSeconds.observe(labels, d.durationMs / 1000);
          break;
        }
        case 'ModelCallFailed': {
          const d = e.data as { kind: string; retryInMs?: number; compactBeforeRetry?: boolean };
          this.modelErrors.inc({ kind: d.kind });
          if (d.retryInMs !== undefined || d.compactBeforeRetry) this.modelRetries.inc({ kind: d.kind });
          break;
        }
        case 'ToolCallCompleted': {
          const d = e.data as { name: string; isError?: boolean; outcomeUnknown?: boolean };
          // The name is the model's to choose: only the tools this process has are labels.
          const tool = this.sources.knownTool === undefined || this.sources.knownTool(d.name) ? d.name : 'other';
          this.toolCalls.inc({ tool, outcome: d.outcomeUnknown ? 'unknown' : d.isError ? 'error' : 'ok' });
          break;
        }
        default:
      }
    }
  }

  observeAppend(store: string, seconds: number, ok: boolean): void {
    this.appendSeconds.observe({ store, outcome: ok ? 'ok' : 'error' }, seconds);
  }

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpSeconds.observe({ method, route }, seconds);
  }

  /** An event stream opened; the function returned closes it (once). */
  sseOpened(): () => void {
    this.sseOpen.inc();
    let open = true;
    return () => {
      if (open) this.sseOpen.dec();
      open = false;
    };
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text: prom-client's series, then the store head. */
  async text(): Promise<string> {
    // A store that does not answer omits the head series; the fault itself is counted by triad_store_errors_total.
    const [own, head] = await Promise.all([this.registry.metrics(), this.sources.headPosition?.().catch(() => undefined)]);
    const lines: string[] = [];
    // Left out while the store does not answer (a gauge without labels would say 0).
    if (head !== undefined) {
      lines.push('# HELP triad_event_store_head_position Global position of the last event.', '# TYPE triad_event_store_head_position gauge', `triad_event_store_head_position ${head}`);
    }
    return lines.length > 0 ? `${own}${lines.join('\n')}\n` : own;
  }
}

/** The process's TriadMetrics (a provider of the global events module). */
export const METRICS = Symbol('METRICS');

/**
 * What a counter may add: a recorded figure that is not a finite amount of zero or more (a store
 * written before answers' usage was checked) adds nothing, as a counter cannot go down.
 */
function amount(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}
