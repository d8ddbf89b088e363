import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { CLI, freePort } from '../faults/serve-support';
import { tempDir } from '../support/temp-dir';
import { waitFor } from '../support/wait-for';

// Spans of a run exported by `triad serve` over OTLP/HTTP to a loopback receiver (this test's own
// HTTP server, reading the JSON the exporter posts to /v1/traces); and no SDK loaded without an endpoint.

jest.setTimeout(40_000);

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; arrayValue?: { values: Array<{ stringValue?: string }> } };
}
interface OtlpSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  attributes: OtlpAttribute[];
}
interface ExportRequest {
  resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

function attrs(span: OtlpSpan): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of span.attributes) {
    const v = a.value;
    out[a.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.arrayValue?.values.map((x) => x.stringValue)));
  }
  return out;
}

it('a run exports invoke_agent, chat and execute_tool spans with GenAI attributes; no message content unless opted in', async () => {
  const spans: OtlpSpan[] = [];
  const resources: Array<Record<string, unknown>> = [];
  const receiver: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/v1/traces' && (req.headers['content-type'] ?? '').includes('json')) {
        const request = JSON.parse(body) as ExportRequest;
        for (const rs of request.resourceSpans) {
          resources.push(attrs({ attributes: rs.resource.attributes } as OtlpSpan));
          for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverPort = (receiver.address() as { port: number }).port;
  const dir = tempDir('triad-traces-');
  const port = await freePort();
  const key = 'traces-operator-0123456789';
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TRIAD_DATA_DIR: join(dir.path, 'data'),
    TRIAD_STORE: 'sqlite',
    TRIAD_PORT: String(port),
    TRIAD_HOST: '127.0.0.1',
    TRIAD_API_KEYS: `ops:operator:${key}`,
    TRIAD_MODEL: 'offline',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiverPort}`,
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'triad-test',
  };
  delete env.ANTHROPIC_API_KEY;
  delete env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
  const proc = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let runId = '';
  try {
    await waitFor('triad serve to listen', async () => stdout.includes('triad listening'), 30_000);
    const res = await fetch(`http://127.0.0.1:${port}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] }),
    });
    expect(res.status).toBe(202);
    runId = ((await res.json()) as { runId: string }).runId;
    // The reviewer's phase span ends when its driver stops at the review gate.
    await waitFor('the reviewer phase span', async () => spans.some((s) => s.name === 'invoke_agent reviewer'), 20_000, 25);
  } finally {
    proc.kill('SIGTERM');
    await exited;
    receiver.close();
    dir.remove();
  }
  expect(resources[0]).toMatchObject({ 'service.name': 'triad-test' });
  const names = new Set(spans.map((s) => s.name));
  for (const name of ['invoke_agent architect', 'invoke_agent executor', 'invoke_agent reviewer', 'chat triad-offline-1', 'execute_tool write_file', 'execute_tool submit_plan']) {
    expect({ name, exported: names.has(name) }).toEqual({ name, exported: true });
  }
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const chat = spans.find((s) => s.name === 'chat triad-offline-1' && attrs(s)['gen_ai.agent.name'] === 'executor')!;
  expect(attrs(chat)).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'triad.offline',
    'gen_ai.request.model': 'triad-offline-1',
    'gen_ai.response.model': 'triad-offline-1',
    'gen_ai.conversation.id': runId,
    'triad.run.id': runId,
    'triad.turn': expect.any(Number),
    'gen_ai.usage.input_tokens': expect.any(Number),
    'gen_ai.usage.output_tokens': expect.any(Number),
  });
  expect(attrs(chat)['gen_ai.response.finish_reasons']).toEqual([expect.any(String)]);
  expect(byId.get(chat.parentSpanId!)?.name).toBe('invoke_agent executor');
  const tool = spans.find((s) => s.name === 'execute_tool write_file')!;
  expect(attrs(tool)).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'write_file', 'gen_ai.tool.call.id': expect.any(String), 'triad.run.id': runId });
  expect(byId.get(tool.parentSpanId!)?.name).toBe('invoke_agent executor');
  const reviewer = spans.find((s) => s.name === 'invoke_agent reviewer')!;
  expect(attrs(reviewer)).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'triad.run.id': runId, 'triad.review.id': `rev_${runId}_1` });
  // Message content is opt-in.
  for (const s of spans) {
    const a = attrs(s);
    expect(a['gen_ai.input.messages'] ?? a['gen_ai.output.messages'] ?? a['gen_ai.tool.call.arguments']).toBeUndefined();
  }
});

it('without an OTLP endpoint no SDK module is loaded', () => {
  const sdk = resolve(__dirname, '..', '..', 'dist', 'observability', 'otel-sdk.js');
  const script = `
    const { startTracingFromEnv } = require(${JSON.stringify(sdk)});
    const stop = startTracingFromEnv('0', {});
    const loaded = Object.keys(require.cache).filter((f) => /sdk-trace|exporter-trace/.test(f));
    process.stdout.write(JSON.stringify({ started: stop !== undefined, loaded }));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  expect(JSON.parse(r.stdout)).toEqual({ started: false, loaded: [] });
});
