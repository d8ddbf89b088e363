import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startE2eApp, type E2eApp } from '../support/e2e-app';
import { startFakeMessagesApi, toolUseStep, type FakeStep, type RecordedRequest } from '../support/fake-messages-api';

// The program `triad` runs is the bundle dist/triad.cjs (scripts/bundle-dist.js): one file loaded
// instead of dist/'s modules, and still serving the files that sit elsewhere (the web console,
// Swagger UI's assets) from their own places.
const DIST = resolve(__dirname, '..', '..', 'dist');

it('given a built dist/, when `triad` is loaded, then the program comes from dist/triad.cjs and no other module of dist/ is read', () => {
  expect(existsSync(join(DIST, 'triad.cjs'))).toBe(true);
  const script = `
    const { runCli } = require(${JSON.stringify(join(DIST, 'cli', 'main.js'))});
    const loaded = Object.keys(require.cache).filter((f) => f.startsWith(${JSON.stringify(DIST)}));
    console.log(JSON.stringify({ loaded: loaded.map((f) => f.slice(${DIST.length + 1})).sort(), runCli: typeof runCli }));
  `;
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  expect(out.status).toBe(0);
  expect(JSON.parse(out.stdout)).toEqual({ loaded: ['cli/load-program.js', 'cli/main.js', 'triad.cjs'], runCli: 'function' });
});

it('given a built dist/, then the bundle is ASCII only: V8 keeps its source as one-byte text, half the memory', () => {
  const bytes = readFileSync(join(DIST, 'triad.cjs'));
  expect(bytes.findIndex((byte) => byte > 0x7f)).toBe(-1);
});

it('given --enable-source-maps, when code in the bundle throws, then its stack names the modules of dist/', () => {
  // A CLI output whose writer is missing: commander's error path throws inside the program.
  const script = `
    const { buildProgram } = require(${JSON.stringify(join(DIST, 'cli', 'main.js'))});
    try { buildProgram({ out: null }).parse(['node', 'triad', 'runs', 'list', '--limit', 'x']); } catch (err) { console.log(err.stack); }
  `;
  const out = spawnSync(process.execPath, ['--enable-source-maps', '-e', script], { encoding: 'utf8' });
  expect(out.status).toBe(0);
  const frames = out.stdout.split('\n').filter((line) => line.trim().startsWith('at '));
  expect(frames[0]).toContain(join(DIST, 'cli', 'program.js'));
  expect(out.stdout).not.toContain('triad.cjs');
});

describe('the bundled app serves files from their own places', () => {
  let app: E2eApp;
  beforeAll(async () => {
    app = await startE2eApp();
  });
  afterAll(() => app?.close());

  it('given the console and the API docs, when fetched, then the console page, Swagger UI and its assets answer 200', async () => {
    const page = await app.request('GET', '/', { as: null });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<div id="app">');
    const docs = await app.request('GET', '/docs', { as: null });
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('swagger-ui');
    const css = await app.request('GET', '/docs/swagger-ui.css', { as: null });
    expect(css.status).toBe(200);
    expect(css.text.length).toBeGreaterThan(1000);
  });

  it('given a run whose executor searches its workspace, when driven by the bundle, then the search thread starts from its own file and finds the text', async () => {
    const api = await startFakeMessagesApi({ apiKey: API_KEY, fallback: scripted });
    const served = await startE2eApp({ TRIAD_MODEL: 'anthropic', ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: api.url });
    try {
      const launched = await served.request<{ runId: string }>('POST', '/v1/runs', { body: { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] } });
      expect(launched.status).toBe(202);
      const waited = await served.request<{ runStatus: string }>('POST', `/v1/runs/${launched.body.runId}/wait?timeoutMs=30000`, { as: 'auditor' });
      expect(waited.body.runStatus).toBe('awaiting_review');
      const results = api.requests.flatMap((r) => JSON.stringify(r.body?.messages ?? []).match(/hello\.txt:1: Hello from the bundle/g) ?? []);
      expect(results.length).toBeGreaterThan(0);
    } finally {
      await served.close();
      await api.stop();
    }
  });
});

const API_KEY = 'sk-ant-bundle-test';

/** Architect plans; the executor writes hello.txt, searches for it, then submits; the reviewer approves. */
function scripted(r: RecordedRequest): FakeStep {
  const system = JSON.stringify(r.body?.system ?? '');
  if (system.includes('You are the Architect')) return toolUseStep('submit_plan', { plan: 'write hello.txt, then check it' });
  if (system.includes('You are the Reviewer')) return toolUseStep('submit_verdict', { verdict: 'APPROVE', findings: [], summary: 'ok' });
  const turn = ((r.body!.messages as unknown[]).length + 1) >> 1;
  if (turn === 1) return toolUseStep('write_file', { path: 'hello.txt', content: 'Hello from the bundle\n' });
  if (turn === 2) return toolUseStep('search_files', { pattern: 'Hello' });
  return toolUseStep('submit_work', { summary: 'wrote and found hello.txt' });
}
