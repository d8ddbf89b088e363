import { createBuiltinTools } from '../../../src/team/tools/builtin-tools';
import { DEFAULT_SANDBOX_SETTINGS, Sandbox } from '../../../src/team/tools/sandbox/sandbox';
import { buildRunLaunched, InvalidLaunchError } from '../../../src/team/commands/launch';
import { contextFor, scratchDir, toolNamed } from './tool-test-support';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

// No sandbox, no command: where bubblewrap cannot start, run_command refuses with the fix; with
// TRIAD_SANDBOX=off it runs, and a run launched sandboxed is still refused there.

describe('the sandbox, when it cannot start or is off', () => {
  let ws: ReturnType<typeof scratchDir>;
  beforeEach(() => (ws = scratchDir('triad-sandbox-')));
  afterEach(() => ws.remove());

  it('given no bwrap on the PATH, when a command is run, then it is refused in one line naming the fix, and nothing runs', async () => {
    const sandbox = Sandbox.open(DEFAULT_SANDBOX_SETTINGS, { PATH: '/nonexistent' });
    expect(sandbox.usable).toBe(false);
    expect(sandbox.describe()).toMatch(/^unavailable: bubblewrap \(bwrap\) is not installed; run_command and stdio MCP servers are refused/);
    const outcome = await toolNamed(createBuiltinTools({}, sandbox), 'run_command').execute({ command: 'touch ran' }, contextFor(ws.path));
    expect(outcome).toEqual({
      isError: true,
      output: 'run_command needs the OS sandbox, which cannot start: bubblewrap (bwrap) is not installed. Install it (apt-get install bubblewrap) or set TRIAD_SANDBOX=off to run tools unsandboxed',
    });
    expect(existsSync(join(ws.path, 'ran'))).toBe(false);
  });

  it('given TRIAD_SANDBOX=off, when a command is run, then it runs as the server in the workspace, with the allow-listed environment', async () => {
    const off = Sandbox.open({ ...DEFAULT_SANDBOX_SETTINGS, mode: 'off' });
    expect(off.describe()).toMatch(/^off \(TRIAD_SANDBOX=off\)/);
    process.env.SOME_SERVER_SECRET = 'visible-only-unsandboxed-0123';
    try {
      const outcome = await toolNamed(createBuiltinTools({}, off), 'run_command').execute({ command: 'pwd; env' }, contextFor(ws.path));
      expect(outcome.isError).toBe(false);
      expect(outcome.output.startsWith(`${ws.path}\n`)).toBe(true);
      expect(outcome.output).not.toContain('visible-only-unsandboxed-0123');
    } finally {
      delete process.env.SOME_SERVER_SECRET;
    }
  });

  it('given a run launched with the sandbox, when a process with it off would run its command, then the command is refused', async () => {
    const off = Sandbox.open({ ...DEFAULT_SANDBOX_SETTINGS, mode: 'off' });
    const outcome = await toolNamed(createBuiltinTools({}, off), 'run_command').execute({ command: 'touch ran' }, { ...contextFor(ws.path), sandboxMode: 'bubblewrap' });
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toMatch(/launched with the OS sandbox, and this process has it off/);
    expect(existsSync(join(ws.path, 'ran'))).toBe(false);
  });
});

describe('a launch records its sandbox', () => {
  const input = { goal: 'g', acceptanceCriteria: ['c'] };
  const ctx = { runId: 'run_s', launchedBy: 'user:ann', now: new Date(0), provider: 'offline', defaultModel: 'm' };

  it("given a role's own hosts and a deployment default, then each role gets its own, else the default, normalised", () => {
    const data = buildRunLaunched({ ...input, team: { executor: { network: ['Registry.NPMjs.org', '*.github.com', '127.0.0.1:8080'] } } }, { ...ctx, sandbox: { mode: 'bubblewrap', defaultNetwork: ['pypi.org'] } });
    expect(data.sandbox).toEqual({ mode: 'bubblewrap', network: { architect: ['pypi.org'], executor: ['*.github.com', '127.0.0.1:8080', 'registry.npmjs.org'], reviewer: ['pypi.org'] } });
  });

  it('given TRIAD_SANDBOX=off, then the run is recorded as unsandboxed', () => {
    expect(buildRunLaunched(input, { ...ctx, sandbox: { mode: 'off', defaultNetwork: [] } }).sandbox).toEqual({ mode: 'off', network: {} });
  });

  it.each([['not a host!'], ['*.1.2.3.4'], ['host:99999'], ['*.com.']])('given the host %p, then the launch is refused naming it', (host) => {
    expect(() => buildRunLaunched({ ...input, team: { executor: { network: [host] } } }, { ...ctx, sandbox: { mode: 'bubblewrap', defaultNetwork: [] } })).toThrow(InvalidLaunchError);
    expect(() => buildRunLaunched({ ...input, team: { executor: { network: [host] } } }, { ...ctx, sandbox: { mode: 'bubblewrap', defaultNetwork: [] } })).toThrow(/^team\.executor\.network\[0\]/);
  });
});
