import { TriadMetrics, type MetricEvent } from '../../src/observability/metrics';
import { tokenCountTally, TokenCounter } from '../../src/team/models/token-count';

// The metrics a process exposes, fed the way the app feeds them: recorded run events, sources read
// at scrape time, HTTP and store observations.

const completed = (role: string, model: string, extra: Record<string, unknown> = {}): MetricEvent => ({
  type: 'ModelCallCompleted',
  data: { role, model, turn: 1, callId: 'call_1', usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 5 }, costUsd: 0.25, durationMs: 1500, ...extra },
});

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('TriadMetrics', () => {
  it('given a model that calls made-up tool names, then they are counted as other, and the known tools by name', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    m.use({ knownTool: (name) => name === 'write_file' });
    m.observeRunEvents([
      { type: 'ToolCallCompleted', data: { name: 'write_file', isError: false } },
      ...Array.from({ length: 500 }, (_, i) => ({ type: 'ToolCallCompleted', data: { name: `made_up_${i}`, isError: true } })),
    ]);
    const text = await m.text();
    expect(value(text, 'triad_tool_calls_total{tool="write_file",outcome="ok"}')).toBe(1);
    expect(value(text, 'triad_tool_calls_total{tool="other",outcome="error"}')).toBe(500);
    expect(text).not.toContain('made_up_');
  });

  it('given runs launched with a thousand different model ids, then the model label keeps to a bounded set', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    const ids = Array.from({ length: 1000 }, (_, i) => [`made-up-${i}`, `claude-sonnet-4-5-x${i}`, `claude-opus-4-1-2025${String(i).padStart(4, '0')}`]).flat();
    m.observeRunEvents(ids.map((id) => completed('architect', id)));
    const models = new Set([...(await m.text()).matchAll(/triad_model_turns_total\{role="architect",model="([^"]*)"\}/g)].map((x) => x[1]));
    expect([...models].sort()).toEqual(['claude-opus-4-1', 'claude-sonnet-4', 'other']);
  });

  it('counts turns, tokens, cost and latency by role and model from recorded events, never by run', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    m.observeRunEvents([
      { type: 'RunLaunched', data: { runId: 'run_abc' } },
      completed('architect', 'claude-sonnet-4-5'),
      completed('architect', 'claude-sonnet-4-5'),
      completed('executor', 'claude-haiku-4-5'),
      { type: 'ModelCallFailed', data: { role: 'executor', kind: 'overloaded', retryInMs: 10_000 } },
      { type: 'ModelCallFailed', data: { role: 'executor', kind: 'authentication' } },
      { type: 'ModelCallFailed', data: { role: 'executor', kind: 'context_too_long', compactBeforeRetry: true } },
      { type: 'ToolCallCompleted', data: { name: 'write_file', isError: false } },
      { type: 'ToolCallCompleted', data: { name: 'run_command', isError: false, outcomeUnknown: true } },
    ]);
    const text = await m.text();
    expect(value(text, 'triad_model_turns_total{role="architect",model="claude-sonnet-4-5"}')).toBe(2);
    expect(value(text, 'triad_model_turns_total{role="executor",model="claude-haiku-4-5"}')).toBe(1);
    expect(value(text, 'triad_model_tokens_total{role="architect",model="claude-sonnet-4-5",type="input"}')).toBe(200);
    expect(value(text, 'triad_model_tokens_total{role="architect",model="claude-sonnet-4-5",type="cache_read"}')).toBe(10);
    expect(value(text, 'triad_model_cost_usd_total{role="architect",model="claude-sonnet-4-5"}')).toBe(0.5);
    expect(value(text, 'triad_model_call_duration_seconds_bucket{le="2.5",role="architect",model="claude-sonnet-4-5"}')).toBe(2);
    expect(value(text, 'triad_model_call_duration_seconds_bucket{le="1",role="architect",model="claude-sonnet-4-5"}')).toBe(0);
    expect(value(text, 'triad_model_errors_total{kind="overloaded"}')).toBe(1);
    expect(value(text, 'triad_model_errors_total{kind="authentication"}')).toBe(1);
    expect(value(text, 'triad_model_retries_total{kind="overloaded"}')).toBe(1);
    expect(value(text, 'triad_model_retries_total{kind="context_too_long"}')).toBe(1);
    expect(value(text, 'triad_model_retries_total{kind="authentication"}')).toBeUndefined();
    expect(value(text, 'triad_tool_calls_total{tool="run_command",outcome="unknown"}')).toBe(1);
    expect(text).not.toContain('run_abc');
    expect(text).not.toContain('call_1');
  });

  it('a recorded figure that is not an amount of zero or more adds nothing and does not throw', async () => {
    // Given events of a store written before answers' usage was checked
    const m = new TriadMetrics({ defaultMetrics: false });
    const bad = completed('architect', 'm', { usage: { inputTokens: -500, outputTokens: Number.NaN, cacheReadTokens: -3 }, costUsd: -0.001 });
    // When they are observed, then the counters stay where they were
    expect(() => m.observeRunEvents([completed('architect', 'm'), bad])).not.toThrow();
    const text = await m.text();
    expect(value(text, 'triad_model_tokens_total{role="architect",model="other",type="input"}')).toBe(100);
    expect(value(text, 'triad_model_tokens_total{role="architect",model="other",type="cache_read"}')).toBe(5);
    expect(value(text, 'triad_model_cost_usd_total{role="architect",model="other"}')).toBe(0.25);
    expect(value(text, 'triad_model_turns_total{role="architect",model="other"}')).toBe(2);
  });

  it('reads runs, pending reviews and approvals (with the oldest one\'s age) and the decision log at scrape time', async () => {
    const now = Date.parse('2026-01-01T00:10:00Z');
    const m = new TriadMetrics({ defaultMetrics: false, now: () => now });
    let statuses = ['executing', 'awaiting_review', 'awaiting_review'];
    m.use({
      runStatuses: () => statuses,
      pendingReviews: () => [{ since: '2026-01-01T00:05:00Z' }, { since: '2026-01-01T00:09:00Z' }],
      pendingApprovals: () => [],
      activeDrivers: () => 1,
      headPosition: () => Promise.resolve(42),
      decisionLog: () => Promise.resolve({ events: 3, seconds: 7.5, failing: true, failures: 2 }),
      health: () => ({ storeErrors: 4, restarts: [['runs', 2]], projectionPositions: [['runs', 40]] }),
      leaseHeartbeat: () => ({ renewals: 9, renewalFailures: 1, leasesLost: 0, heartbeatDelayMaxSeconds: 0.012, eventLoopDelayMaxSeconds: 0.034 }),
      placements: () => ({ take: 3, hand: 1, queue: 0 }),
      maxActiveRuns: () => 5,
    });
    let text = await m.text();
    expect(value(text, 'triad_runs{status="awaiting_review"}')).toBe(2);
    expect(value(text, 'triad_active_drivers')).toBe(1);
    expect(value(text, 'triad_event_store_head_position')).toBe(42);
    expect(value(text, 'triad_reviews_pending')).toBe(2);
    expect(value(text, 'triad_reviews_oldest_pending_age_seconds')).toBe(300);
    expect(value(text, 'triad_approvals_pending')).toBe(0);
    expect(value(text, 'triad_approvals_oldest_pending_age_seconds')).toBe(0);
    expect(value(text, 'triad_decision_log_lag_events')).toBe(3);
    expect(value(text, 'triad_decision_log_lag_seconds')).toBe(7.5);
    expect(value(text, 'triad_decision_log_projector_failing')).toBe(1);
    expect(value(text, 'triad_decision_log_projector_failures_total')).toBe(2);
    expect(value(text, 'triad_leases_lost_total')).toBe(0);
    expect(value(text, 'triad_lease_renewals_total')).toBe(9);
    expect(value(text, 'triad_lease_renewal_failures_total')).toBe(1);
    expect(value(text, 'triad_lease_heartbeat_delay_max_seconds')).toBe(0.012);
    expect(value(text, 'triad_event_loop_delay_max_seconds')).toBe(0.034);
    expect(value(text, 'triad_store_errors_total')).toBe(4);
    expect(value(text, 'triad_restarts_total{component="runs"}')).toBe(2);
    expect(value(text, 'triad_projection_position{projection="runs"}')).toBe(40);
    expect(value(text, 'triad_runs_placed_total{placement="take"}')).toBe(3);
    expect(value(text, 'triad_runs_placed_total{placement="hand"}')).toBe(1);
    expect(value(text, 'triad_runs_placed_total{placement="queue"}')).toBe(0);
    expect(value(text, 'triad_max_active_runs')).toBe(5);
    // A status no run has any more is no longer reported.
    statuses = ['completed'];
    text = await m.text();
    expect(value(text, 'triad_runs{status="awaiting_review"}')).toBeUndefined();
    expect(value(text, 'triad_runs{status="completed"}')).toBe(1);
  });

  it('counts the token counts of every run: asked (ok, failed) and skipped', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    const before = { ...tokenCountTally };
    const request = { model: 'claude-sonnet-4-6', system: 's', tools: [], messages: [{ role: 'user' as const, content: 'hello' }] };
    await new TokenCounter({ countTokens: async () => 7 }).count(request);
    await new TokenCounter({ countTokens: async () => Promise.reject(new Error('down')) }).count(request);
    new TokenCounter({ countTokens: async () => 7 }).worthAsking(request, 180_000);
    const text = await m.text();
    expect(value(text, 'triad_token_counts_total{outcome="ok"}')).toBe(before.ok + 1);
    expect(value(text, 'triad_token_counts_total{outcome="failed"}')).toBe(before.failed + 1);
    expect(value(text, 'triad_token_counts_total{outcome="skipped"}')).toBe(before.skipped + 1);
  });

  it('leaves the store head out while the store does not answer', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    m.use({ headPosition: () => Promise.reject(new Error('ECONNREFUSED')) });
    expect(value(await m.text(), 'triad_event_store_head_position')).toBeUndefined();
  });

  it('counts HTTP requests by route pattern and status, store appends, and open event streams', async () => {
    const m = new TriadMetrics({ defaultMetrics: false });
    m.observeHttp('GET', '/v1/runs/:id', 404, 0.01);
    m.observeHttp('GET', '/v1/runs/:id', 404, 0.02);
    m.observeAppend('sqlite', 0.002, true);
    const close = m.sseOpened();
    m.sseOpened();
    close();
    close();
    const text = await m.text();
    expect(value(text, 'triad_http_requests_total{method="GET",route="/v1/runs/:id",status="404"}')).toBe(2);
    expect(value(text, 'triad_store_append_duration_seconds_count{store="sqlite",outcome="ok"}')).toBe(1);
    expect(value(text, 'triad_sse_streams_open')).toBe(1);
  });
});
