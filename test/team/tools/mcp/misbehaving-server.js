// An MCP server over stdio (the SDK's McpServer) that misbehaves on request: slow, crashing,
// malformed. Started by mcp-servers.int.spec.ts with node; plain CommonJS, no build step.
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { z } = require('zod');

// Which start of the server answered (a pid says nothing inside a sandbox: it is its PID namespace's).
const INSTANCE = require('node:crypto').randomBytes(6).toString('hex');

// Refuses to start while the file FIXTURE_REFUSE names exists (a server that cannot come back).
if (process.env.FIXTURE_REFUSE && require('node:fs').existsSync(process.env.FIXTURE_REFUSE)) {
  process.stderr.write('refusing to start\n');
  process.exit(1);
}

const server = new McpServer({ name: 'misbehaving', version: '1.0.0' });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

server.registerTool(
  'echo',
  { description: 'Echoes the message with this process id.', inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } },
  async ({ message }) => text(`instance ${INSTANCE}: ${message}`),
);
server.registerTool(
  'slow',
  { description: 'Answers after ms milliseconds.', inputSchema: { ms: z.number().int() }, annotations: { readOnlyHint: true } },
  ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(text(`slept ${ms} ms`)), ms)),
);
server.registerTool('crash', { description: 'Exits in the middle of the call.', inputSchema: {} }, async () => {
  process.stderr.write(`crashing now, token ${process.env.FIXTURE_SECRET}\n`);
  process.exit(3);
});
// The answer goes straight to stdout, past the SDK's own checks: content that is not a list.
server.registerTool('malformed', { description: 'Answers with a result that is not a tool result.', inputSchema: {}, annotations: { idempotentHint: true } }, (_args, extra) => {
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: extra.requestId, result: { content: 'not a list', isError: 'no' } })}\n`);
  return new Promise(() => undefined);
});
server.registerTool('env', { description: 'Prints the secret it was given.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () =>
  text(`my token is ${process.env.FIXTURE_SECRET} (Bearer ${process.env.FIXTURE_SECRET})`),
);

server.connect(new StdioServerTransport());
