import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { E2E_KEYS, startE2eApp, type E2eApp } from '../support/e2e-app';

// The curl examples of docs/API.md, against the real app (the OpenAPI document's own tests: openapi.e2e.spec.ts).

jest.setTimeout(30_000);

let e2e: E2eApp;
beforeAll(async () => {
  e2e = await startE2eApp();
});
afterAll(async () => {
  await e2e?.close();
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
