import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';

// The OpenAPI document and its viewer, and the curl examples of docs/API.md, against the real app.

jest.setTimeout(30_000);

let e2e: E2eApp;
beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
});

interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; required: boolean }>; requestBody?: unknown; security?: unknown[] }>>;
  components: { schemas: Record<string, { required?: string[]; properties?: Record<string, Record<string, unknown>> }> };
}

describe('/openapi.json and /docs', () => {
  it('is a valid OpenAPI document of every route, with the DTOs\' validation rules as schemas', async () => {
    const res = await e2e.request<OpenApi>('GET', '/openapi.json', { as: null });
    expect(res.status).toBe(200);
    const doc = res.body;
    // A maintained validator: the OpenAPI 3.0 schema, then every $ref resolved.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
    expect(doc.openapi).toMatch(/^3\./);
    for (const [path, method] of [
      ['/v1/runs', 'post'],
      ['/v1/runs', 'get'],
      ['/v1/runs/{id}', 'get'],
      ['/v1/runs/{id}/events', 'get'],
      ['/v1/runs/{id}/wait', 'post'],
      ['/v1/runs/{id}/cancel', 'post'],
      ['/v1/runs/{id}/context', 'get'],
      ['/v1/runs/{id}/resume', 'post'],
      ['/v1/runs/{id}/fork', 'post'],
      ['/v1/projects', 'post'],
      ['/v1/projects', 'get'],
      ['/v1/projects/{id}', 'get'],
      ['/v1/projects/{id}/events', 'get'],
      ['/v1/projects/{id}/cancel', 'post'],
      ['/v1/projects/{id}/tasks/{key}/retry', 'post'],
      ['/v1/projects/{id}/review/approve', 'post'],
      ['/v1/projects/{id}/review/reject', 'post'],
      ['/v1/reviews', 'get'],
      ['/v1/reviews/{id}/approve', 'post'],
      ['/v1/approvals/{id}/reject', 'post'],
      ['/v1/decisions', 'get'],
      ['/v1/decisions/verify', 'get'],
      ['/v1/decisions/head', 'get'],
      ['/health', 'get'],
      ['/metrics', 'get'],
    ]) {
      expect({ path, method, documented: doc.paths[path]?.[method] !== undefined }).toEqual({ path, method, documented: true });
    }
    const launch = doc.components.schemas.LaunchRunDto;
    expect(launch.required).toEqual(expect.arrayContaining(['goal', 'acceptanceCriteria']));
    expect(launch.properties?.acceptanceCriteria).toMatchObject({ type: 'array', minItems: 1, maxItems: 100 });
    expect(launch.properties?.maxIterations).toMatchObject({ type: 'integer', minimum: 1, maximum: 50 });
    const listDecisions = doc.paths['/v1/decisions'].get.parameters ?? [];
    expect(listDecisions.map((p) => p.name)).toEqual(expect.arrayContaining(['runId', 'decider', 'outcome', 'from', 'to', 'format']));
    expect(listDecisions.every((p) => p.in === 'query' && !p.required)).toBe(true);
    // Query parameters of the event streams, whose handlers also take the raw request and response.
    for (const path of ['/v1/runs/{id}/events', '/v1/projects/{id}/events']) {
      expect(doc.paths[path].get.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'fromRevision', in: 'query', required: false })]));
    }
    expect(doc.paths['/v1/runs/{id}/wait'].post.parameters?.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(['timeoutMs']);
    expect(doc.paths['/v1/runs'].post.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths['/health'].get.security).toEqual([]);
  });

  it('/docs is Swagger UI with its assets served here (no CDN)', async () => {
    const page = await e2e.request('GET', '/docs', { as: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, `${e2e.url}/docs`);
      const res = await fetch(url);
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      await res.arrayBuffer();
    }
  });
});

/** A curl command line split into words (single and double quotes, backslash escapes in double quotes). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      for (i++; line[i] !== '"'; i++) word += line[i] === '\\' ? line[++i] : line[i];
      inWord = true;
    } else if (c === ' ') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

interface Example {
  line: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  status?: number;
}

/** Every `curl` line of the markdown's bash blocks (with `\` continuations), and the status in the comment after it. */
function curlExamples(markdown: string): Example[] {
  const examples: Example[] = [];
  for (const block of markdown.matchAll(/```bash\n([\s\S]*?)```/g)) {
    const lines = block[1].replace(/\\\n\s*/g, '').split('\n');
    lines.forEach((line, i) => {
      if (!line.startsWith('curl ')) return;
      const words = shellWords(line).slice(1);
      const example: Example = { line, method: 'GET', url: '', headers: {} };
      for (let w = 0; w < words.length; w++) {
        const word = words[w];
        if (word === '-X') example.method = words[++w];
        else if (word === '-H') {
          const [name, ...value] = words[++w].split(':');
          example.headers[name.trim().toLowerCase()] = value.join(':').trim();
        } else if (word === '-d' || word === '--data') {
          example.body = words[++w];
          if (example.method === 'GET') example.method = 'POST';
        } else if (word === '-o') w++;
        else if (!word.startsWith('-')) example.url = word;
      }
      const status = /^# (\d{3})\b/.exec(lines[i + 1] ?? '');
      if (status) example.status = Number(status[1]);
      examples.push(example);
    });
  }
  return examples;
}

describe('docs/API.md examples', () => {
  it('answer the documented statuses', async () => {
    const examples = curlExamples(readFileSync(join(__dirname, '../../docs/API.md'), 'utf8'));
    const vars: Record<string, string> = { OPERATOR_KEY: E2E_KEYS.operator, REVIEWER_KEY: E2E_KEYS.reviewer, AUDITOR_KEY: E2E_KEYS.auditor };
    const expand = (text: string) => text.replace(/\$([A-Z_]+)/g, (m, name: string) => vars[name] ?? m);
    let ran = 0;
    for (const example of examples) {
      // A placeholder (a hash or an id elided with `…`) cannot be run as written.
      if (example.line.includes('…')) continue;
      const url = expand(example.url).replace('http://127.0.0.1:3000', e2e.url);
      const headers = Object.fromEntries(Object.entries(example.headers).map(([k, v]) => [k, expand(v)]));
      const res = await fetch(url, { method: example.method, headers, body: example.body });
      const text = await res.text();
      const ok = example.status === undefined ? res.status < 400 : res.status === example.status;
      expect({ example: example.line, status: res.status, ok }).toEqual({ example: example.line, status: res.status, ok: true });
      if (example.method === 'POST' && url.endsWith('/v1/runs') && res.status === 202) vars.RUN_ID = (JSON.parse(text) as { runId: string }).runId;
      if (example.method === 'POST' && url.endsWith('/v1/projects') && res.status === 202) vars.PROJECT_ID = (JSON.parse(text) as { projectId: string }).projectId;
      ran++;
    }
    expect(ran).toBeGreaterThanOrEqual(12);
  });
});
