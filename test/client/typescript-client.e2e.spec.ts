import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';
import { tempDir } from '../support/temp-dir';

// The typed client (clients/typescript) as its users get it: built with its own build script,
// its committed types what the app's OpenAPI document gives, and its README's example run against
// the real app; then its helpers' errors and resumption, through the built package.

jest.setTimeout(90_000);

const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const CLIENT = join(root, 'clients', 'typescript');

type ClientModule = typeof import('../../clients/typescript/src/index');

let e2e: E2eApp;
let client: ClientModule;
const scratch = tempDir('triad-client-');
beforeAll(async () => {
  // The package's build (tsc, then its types beside) while the app starts.
  const [app] = await Promise.all([startE2eApp(), run('npm', ['run', '--silent', 'build'], { cwd: CLIENT })]);
  e2e = app;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the built package, as its users load it
  client = require(join(CLIENT, 'dist', 'index.js')) as ClientModule;
});
afterAll(async () => {
  await e2e?.close();
  scratch.remove();
});

it('the committed schema.d.ts is what the served OpenAPI document gives', async () => {
  // Exits 1 with one line when it is not: `npm run client:generate` rewrites it.
  await expect(run(process.execPath, [join(root, 'scripts', 'generate-client.js'), '--check', '--url', e2e.url])).resolves.toBeDefined();
  // And it bites: a server whose document has one more route gives other types, and the check says so.
  const document = (await e2e.request<{ paths: Record<string, unknown> }>('GET', '/openapi.json', { as: null })).body;
  const changed = { ...document, paths: { ...document.paths, '/v1/extra': { get: { operationId: 'Extra_get', responses: { 200: { description: 'extra' } } } } } };
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(changed)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const failed = await run(process.execPath, [join(root, 'scripts', 'generate-client.js'), '--check', '--url', url]).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 1, stderr: 'clients/typescript/src/schema.d.ts is not what the OpenAPI document gives: run npm run client:generate\n' });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it("runs the README's example against the real app: launch, follow to the gate, wait, review", async () => {
  const readme = readFileSync(join(CLIENT, 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toContain("from '@triad/client'");
  // As its user's program: TypeScript compiled to an ES module, the package where it is built.
  const source = ts.transpileModule(example!, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const file = join(scratch.path, 'example.mjs');
  writeFileSync(file, source.replace("'@triad/client'", `'${pathToFileURL(join(CLIENT, 'dist', 'index.js')).href}'`));
  const { stdout } = await run(process.execPath, [file], {
    env: { ...process.env, TRIAD_URL: e2e.url, TRIAD_API_KEY: E2E_KEYS.operator, TRIAD_REVIEWER_KEY: E2E_KEYS.reviewer },
  });
  const lines = stdout.trim().split('\n');
  expect(lines[0]).toBe('0 RunLaunched');
  expect(lines[lines.length - 3]).toMatch(/^\d+ ReviewOpened$/);
  expect(lines.slice(-2)).toEqual(['waiting awaiting_review', expect.stringMatching(/^approved [a-z_]+$/)]);
  // The events were printed in order, each revision once, up to the gate.
  const revisions = lines.slice(0, -2).map((l) => Number(l.split(' ')[0]));
  expect(revisions).toEqual(revisions.map((_, i) => i));
});

describe('the helpers', () => {
  it('throw TriadApiError with the status and the error body', async () => {
    const operator = client.createTriadClient({ baseUrl: e2e.url, apiKey: E2E_KEYS.operator });
    await expect(operator.getRun('run_unknown')).rejects.toMatchObject({ name: 'TriadApiError', status: 404, body: { statusCode: 404, message: 'run run_unknown not found' } });
    await expect(operator.listReviews()).rejects.toMatchObject({ status: 403 });
    await expect(operator.launchRun({ goal: '', acceptanceCriteria: [] })).rejects.toMatchObject({ status: 400, body: { error: 'Bad Request' } });
    const err = await operator.getRun('run_unknown').catch((e: Error) => e);
    expect(err).toBeInstanceOf(client.TriadApiError);
    expect((err as Error).message).toBe('run run_unknown: 404 run run_unknown not found');
  });

  it('follow a run from where a reader left off (Last-Event-ID), and list and wait through the types', async () => {
    const operator = client.createTriadClient({ baseUrl: `${e2e.url}/`, apiKey: E2E_KEYS.operator });
    const { runId } = await operator.launchRun({ goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt contains "Hello"'] });
    expect(await operator.waitForRun(runId, { timeoutMs: 30_000 })).toMatchObject({ status: 'waiting', runStatus: 'awaiting_review', endedAt: null });
    const types: string[] = [];
    for await (const message of operator.followRun(runId, { lastEventId: 1 })) {
      if (message.kind !== 'event') continue;
      types.push(`${message.event.revision} ${message.event.type}`);
      if (message.event.type === 'ReviewOpened') break;
    }
    expect(types[0]).toMatch(/^2 /);
    expect((await operator.listRuns({ status: 'awaiting_review', limit: 10 })).map((r) => r.runId)).toContain(runId);
    expect(await operator.cancelRun(runId, 'no longer needed')).toEqual({ runId, status: 'cancelled' });
    await expect(operator.cancelRun(runId)).rejects.toMatchObject({ status: 409 });
  });
});
