import { spawnSync } from 'node:child_process';
import { sseReader, startE2eApp, type E2eApp } from '../support/e2e-app';
import { waitFor } from '../support/wait-for';

// /metrics of the real app after a run on the offline model: the series operators rely on, labels
// without ids, and an exposition that Prometheus's own linter (`promtool check metrics`, from the
// Debian package `prometheus`; .ci/run installs it) accepts.

jest.setTimeout(30_000);

let e2e: E2eApp;
beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
});

async function scrape(): Promise<string> {
  const res = await e2e.request<string>('GET', '/metrics', { as: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text;
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

it('after a run reaches its review: runs, turns, tokens, pending reviews, HTTP by route, open streams; promtool accepts it', async () => {
  const launched = await e2e.request<{ runId: string }>('POST', '/v1/runs', { body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
  expect(launched.status).toBe(202);
  const { runId } = launched.body;
  await waitFor('the run to wait for its review', async () => (await e2e.request<{ status: string }>('GET', `/v1/runs/${runId}`)).body.status === 'awaiting_review', 20_000, 25);
  expect((await e2e.request('GET', '/v1/runs/run_does_not_exist')).status).toBe(404);

  const stream = await e2e.fetch('GET', `/v1/runs/${runId}/events`, { headers: { accept: 'text/event-stream' } });
  const events = sseReader(stream);
  await events.next();
  let text = await scrape();
  expect(value(text, 'triad_sse_streams_open')).toBe(1);
  await events.cancel();
  await waitFor('the stream to close', async () => value(await scrape(), 'triad_sse_streams_open') === 0, 5_000, 25);

  text = await scrape();
  expect(value(text, 'triad_runs{status="awaiting_review"}')).toBe(1);
  expect(value(text, 'triad_reviews_pending')).toBe(1);
  expect(value(text, 'triad_reviews_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
  for (const role of ['architect', 'executor', 'reviewer']) {
    expect(value(text, `triad_model_turns_total{role="${role}",model="triad-offline-1"}`)).toBeGreaterThan(0);
    expect(value(text, `triad_model_tokens_total{role="${role}",model="triad-offline-1",type="input"}`)).toBeGreaterThan(0);
    expect(value(text, `triad_model_call_duration_seconds_count{role="${role}",model="triad-offline-1"}`)).toBeGreaterThan(0);
  }
  expect(value(text, 'triad_store_append_duration_seconds_count{store="sqlite",outcome="ok"}')).toBeGreaterThan(0);
  expect(value(text, 'triad_http_requests_total{method="POST",route="/v1/runs",status="202"}')).toBe(1);
  expect(value(text, 'triad_http_requests_total{method="GET",route="/v1/runs/:id",status="404"}')).toBe(1);
  expect(value(text, 'triad_http_requests_total{method="GET",route="/v1/runs/:id/events",status="200"}')).toBe(1);
  expect(value(text, 'triad_decision_log_lag_events')).toBe(0);
  expect(value(text, 'triad_decision_log_projector_failing')).toBe(0);
  expect(value(text, 'triad_event_store_head_position')).toBeGreaterThan(0);
  expect(value(text, 'triad_leases_lost_total')).toBe(0);
  expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  expect(text).toMatch(/^process_resident_memory_bytes /m);
  expect(text).toMatch(/^process_uptime_seconds /m);
  // No id as a label: not the run's, nor the unknown one asked for.
  expect(text).not.toContain(runId);
  expect(text).not.toContain('run_does_not_exist');

  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (promtool.error) throw new Error(`promtool is not installed (apt-get install prometheus): ${promtool.error.message}`);
  expect({ status: promtool.status, output: `${promtool.stdout}${promtool.stderr}` }).toEqual({ status: 0, output: '' });
});
