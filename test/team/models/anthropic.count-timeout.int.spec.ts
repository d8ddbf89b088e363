import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnthropicModelProvider } from '../../../src/team/models/anthropic.provider';
import { ModelError } from '../../../src/team/models/model.port';

// A token count that times out says the count's own timeout, not the one of a model call.
let server: Server;
const held: Array<() => void> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    held.push(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
});
afterAll(async () => {
  for (const release of held) release();
  await new Promise<void>((r) => server.close(() => r()));
});

it('given a count_tokens request that never answers, when it times out, then the error names the count timeout', async () => {
  const { port } = server.address() as AddressInfo;
  const provider = new AnthropicModelProvider({ apiKey: 'sk-ant-test-count-0123456789', baseURL: `http://127.0.0.1:${port}`, timeoutMs: 600_000, countTimeoutMs: 300 });
  const error = await provider.countTokens({ model: 'claude-sonnet-4-6', system: 's', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ModelError);
  expect((error as ModelError).kind).toBe('timeout');
  expect((error as ModelError).message).toContain('300 ms');
  expect((error as ModelError).message).not.toContain('600000');
});
