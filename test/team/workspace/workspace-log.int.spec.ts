import { DEFAULT_SANDBOX_SETTINGS, Sandbox } from '../../../src/team/tools/sandbox/sandbox';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandPathFor } from '../../../src/events/command-handling';
import type { EventStore } from '../../../src/events/event-store/event-store.port';
import { InMemoryEventStore } from '../../../src/events/event-store/in-memory.event-store';
import { forkPoint } from '../../../src/session-replay/fork';
import type { ToolCallCompletedData, WorkspaceUnrecoverableData } from '../../../src/team/domain/run-events';
import { runStatus, terminationReason } from '../../../src/team/domain/run-state';
import { launchRun } from '../../../src/team/commands/launch';
import { ModelError, type ModelProvider, type ModelRequest } from '../../../src/team/models/model.port';
import { OfflineModelProvider } from '../../../src/team/models/offline.model';
import { RunDriver } from '../../../src/team/driver/run-driver';
import type { RunDriverDeps } from '../../../src/team/driver/step-context';
import { loadRunHistory } from '../../../src/team/runs/run-history';
import { createBuiltinTools } from '../../../src/team/tools/builtin-tools';
import { createDefaultToolRegistry } from '../../../src/team/tools/tool-registry';
import { blobStreamId, workspaceAt } from '../../../src/team/workspace/workspace-effects';
import { loadBlob, restoreWorkspace, withRecordedEffects } from '../../../src/team/workspace/workspace-log';
import { tempDir } from '../../support/temp-dir';
import { Redactor } from '../../../src/observability/log-format';

/** Every file under `dir`, relative path → bytes (and executable bit): what "byte for byte" compares. */
function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p);
      else out[p] = `${statSync(join(dir, p)).mode & 0o111 ? 'x ' : ''}${readFileSync(join(dir, p)).toString('base64')}`;
    }
  };
  walk('');
  return out;
}

/** The offline model, whose calls after the `after`-th stop the driver (as if its process went away). */
class InterruptedModel implements ModelProvider {
  readonly name = 'offline';
  private readonly inner = new OfflineModelProvider();
  private calls = 0;
  stop?: () => void;

  constructor(private readonly after: number) {}

  async complete(request: ModelRequest) {
    if (++this.calls > this.after) {
      this.stop?.();
      throw new ModelError('aborted', 'model request aborted');
    }
    return this.inner.complete(request);
  }
}

const GOAL = {
  goal: 'Write a greeting and a farewell',
  acceptanceCriteria: ['file hello.txt contains "Hello"', 'file bye.txt contains "Bye"', 'file notes/extra.md exists'],
};

const UNSANDBOXED = Sandbox.open({ ...DEFAULT_SANDBOX_SETTINGS, mode: 'off' });

describe('the workspace is part of the log', () => {
  const dirs: { remove(): void }[] = [];
  afterAll(() => dirs.forEach((d) => d.remove()));
  const dataDir = () => {
    const d = tempDir('triad-wslog-');
    dirs.push(d);
    return d.path;
  };

  const deps = (store: EventStore, workspaceRoot: string, owner: string, model: ModelProvider, extra: Partial<RunDriverDeps> = {}): RunDriverDeps => ({
    store,
    model,
    tools: createDefaultToolRegistry(),
    clock: { now: () => Date.now() },
    ids: { newId: () => randomUUID() },
    workspaceRoot,
    owner,
    ...extra,
  });

  async function launch(store: EventStore, runId: string, root: string) {
    mkdirSync(join(root, runId), { recursive: true });
    await launchRun(commandPathFor(store), GOAL, { runId, launchedBy: 'user:ann', now: new Date(), provider: 'offline', defaultModel: 'triad-offline-1' });
  }

  /** Drives `runId` in data dir A until its model has answered `after` calls, then stops. */
  async function interrupted(store: EventStore, runId: string, after: number, extra: Partial<RunDriverDeps> = {}) {
    const a = dataDir();
    await launch(store, runId, a);
    const model = new InterruptedModel(after);
    const driver = new RunDriver(runId, deps(store, a, 'process-A', model, extra));
    model.stop = () => driver.stop('process A went away');
    const state = await driver.drive();
    expect(runStatus(state)).not.toBe('awaiting_review');
    return join(a, runId);
  }

  it('a process with an empty data directory takes over and rebuilds the workspace byte for byte, ending like an uninterrupted run', async () => {
    const store = new InMemoryEventStore();
    const uninterrupted = dataDir();
    await launch(store, 'run_whole', uninterrupted);
    const whole = await new RunDriver('run_whole', deps(store, uninterrupted, 'process-U', new OfflineModelProvider())).drive();
    expect(runStatus(whole)).toBe('awaiting_review');

    // Interrupted in the second iteration, after the executor wrote files (a write_file call per turn).
    const wsA = await interrupted(store, 'run_moved', 9);
    const atInterruption = filesOf(wsA);
    expect(Object.keys(atInterruption).length).toBeGreaterThan(0);

    const b = dataDir();
    const state = await new RunDriver('run_moved', deps(store, b, 'process-B', new OfflineModelProvider())).drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(filesOf(join(b, 'run_moved'))).toEqual(filesOf(join(uninterrupted, 'run_whole')));

    // Every call that may change the workspace recorded what it changed; the blobs are in the store.
    const events = await loadRunHistory(store, 'run_moved');
    const writes = events.filter((e) => e.type === 'ToolCallCompleted' && (e.data as ToolCallCompletedData).name === 'write_file');
    expect(writes.length).toBeGreaterThan(0);
    for (const e of writes) expect((e.data as ToolCallCompletedData).files).toEqual([expect.objectContaining({ path: expect.any(String), sha256: expect.any(String) })]);
    const manifest = workspaceAt(events);
    for (const entry of manifest.files.values()) expect('sha256' in entry && (await loadBlob(store, entry.sha256!)).ok).toBe(true);
  });

  it('a run no model call has answered yet is driven from the empty workspace its events describe: a stray file goes', async () => {
    const store = new InMemoryEventStore();
    const root = dataDir();
    await launch(store, 'run_fresh', root);
    writeFileSync(join(root, 'run_fresh', 'stray.txt'), 'not from the events');
    const state = await new RunDriver('run_fresh', deps(store, root, 'process-A', new OfflineModelProvider())).drive();
    expect(runStatus(state)).toBe('awaiting_review');
    expect(Object.keys(filesOf(join(root, 'run_fresh')))).not.toContain('stray.txt');
  });

  it('a fork point\'s workspace is rebuilt from the inherited events alone', async () => {
    const store = new InMemoryEventStore();
    await interrupted(store, 'run_parent', 9);
    const history = await loadRunHistory(store, 'run_parent');
    // What the parent's files were at a point, known independently: the text its write_file calls wrote.
    const written = (events: typeof history) => {
      const legacy = workspaceAt(events.map((e) => (e.type === 'ToolCallCompleted' ? { ...e, data: { ...(e.data as object), files: undefined } } : e)));
      return Object.fromEntries([...legacy.files].map(([path, entry]) => [path, Buffer.from((entry as { inline: string }).inline).toString('base64')]));
    };
    const turns = history.filter((e) => e.type === 'ModelCallCompleted').length;
    for (const turn of [turns, turns - 3, 1]) {
      const inherited = history.slice(0, forkPoint(history, turn).index + 1);
      const fork = join(dataDir(), 'run_fork');
      expect(await restoreWorkspace(store, fork, workspaceAt(inherited))).toEqual(expect.objectContaining({ ok: true }));
      expect(filesOf(fork)).toEqual(written(inherited));
    }
    expect(Object.keys(written(history.slice(0, forkPoint(history, turns).index + 1)))).toEqual(['hello.txt', 'bye.txt']);
    expect(written(history.slice(0, forkPoint(history, 1).index + 1))).toEqual({});
  });

  it('a file over the recorded-size cap: the process that takes over says the workspace cannot be rebuilt and ends the run, never going on in an empty directory', async () => {
    const store = new InMemoryEventStore();
    await interrupted(store, 'run_big', 9, { workspaceLog: { maxBlobBytes: 5 } });
    const b = dataDir();
    const state = await new RunDriver('run_big', deps(store, b, 'process-B', new OfflineModelProvider())).drive();
    expect(runStatus(state)).toBe('failed');
    expect(terminationReason(state)).toBe('ERROR');
    const events = await store.readStream('run-run_big');
    const said = events.find((e) => e.type === 'WorkspaceUnrecoverable')!.data as WorkspaceUnrecoverableData;
    expect(said.owner).toBe('process-B');
    expect(said.paths[0]).toEqual({ path: expect.any(String), reason: expect.stringContaining('over the 5-byte cap') });
    expect(state.endedAt).toBeDefined();
    const ended = events[events.length - 1];
    expect(ended.type).toBe('RunEnded');
    expect((ended.data as { message: string }).message).toMatch(/^the run's workspace cannot be rebuilt from the events: "[^"]+": \d+ bytes, over the 5-byte cap/);
    // Nothing ran in B's empty directory: after B's claim, only the two events that say so.
    const claimed = events.findIndex((e) => e.type === 'DriverClaimed' && (e.data as { owner: string }).owner === 'process-B');
    expect(events.slice(claimed + 1).map((e) => e.type)).toEqual(['WorkspaceUnrecoverable', 'RunEnded']);
  });

  it('a blob missing from the store: the run says so rather than rebuild part of it', async () => {
    const store = new InMemoryEventStore();
    await interrupted(store, 'run_lost', 9);
    // A store that has lost the blobs (removed outside triad).
    const lossy = Object.create(store, {
      readStream: { value: (stream: string, options?: object) => (stream.startsWith('blob-') ? Promise.resolve([]) : store.readStream(stream, options)) },
    }) as EventStore;
    const state = await new RunDriver('run_lost', deps(lossy, dataDir(), 'process-B', new OfflineModelProvider())).drive();
    expect(runStatus(state)).toBe('failed');
    const said = (await store.readStream('run-run_lost')).find((e) => e.type === 'WorkspaceUnrecoverable')!.data as WorkspaceUnrecoverableData;
    expect(said.paths.every((p) => /not in the event store/.test(p.reason))).toBe(true);
  });

  it('run_command that replaces its workspace by a link: what lies behind the link is not walked, the effects are unrecorded', async () => {
    const store = new InMemoryEventStore();
    const ws = join(dataDir(), 'run_swap');
    const outside = join(dataDir(), 'outside');
    mkdirSync(ws);
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'not the run\'s');
    const real = realpathSync(ws);
    // Unsandboxed (TRIAD_SANDBOX=off): inside the sandbox the workspace is a mount that cannot be moved.
    const runCommand = createBuiltinTools({}, UNSANDBOXED).find((t) => t.name === 'run_command')!;
    const command = `cd .. && mv run_swap run_swap_moved && ln -s ${outside} run_swap`;
    const swapped = await withRecordedEffects(
      store,
      ws,
      { name: 'run_command', input: { command } },
      () => runCommand.execute({ command }, { runId: 'run_swap', role: 'executor', workspace: ws, realWorkspace: real, signal: new AbortController().signal }),
      { realWorkspace: real },
    );
    expect(swapped.result.isError).toBe(false);
    expect(swapped.files).toEqual([{ path: '.', unrecorded: "the call's effects could not be recorded (WorkspaceReplaced)" }]);
    expect(JSON.stringify(await store.readAll())).not.toContain('not the run');
    // The run's next command does not start behind the link.
    const next = await runCommand.execute({ command: 'cat secret.txt' }, { runId: 'run_swap', role: 'executor', workspace: ws, realWorkspace: real, signal: new AbortController().signal });
    expect(next).toMatchObject({ isError: true, output: expect.stringMatching(/the workspace has been replaced by a link .* not run/) });
  });

  it('run_command: the files it added, changed, made executable or removed are recorded and rebuilt byte for byte', async () => {
    const store = new InMemoryEventStore();
    const ws = join(dataDir(), 'run_cmd');
    mkdirSync(ws);
    const runCommand = createBuiltinTools().find((t) => t.name === 'run_command')!;
    const run = (command: string) =>
      withRecordedEffects(store, ws, { name: 'run_command', input: { command } }, () =>
        runCommand.execute({ command }, { runId: 'run_cmd', role: 'executor', workspace: ws, signal: new AbortController().signal }),
      );
    const first = await run("mkdir src && echo kept > keep.txt && echo bye > gone.txt && echo 'echo hi' > src/tool.sh");
    expect(first.files.map((f) => f.path)).toEqual(['gone.txt', 'keep.txt', 'src/tool.sh']);
    const second = await run("rm gone.txt && printf 'a\\0b' > src/bin.dat && chmod +x src/tool.sh && mkdir -p deep/er && echo new > deep/er/n.txt");
    expect(second.result.isError).toBe(false);
    expect(second.files.map((f) => [f.path, 'deleted' in f ? 'deleted' : 'executable' in f ? 'x' : 'file'])).toEqual([
      ['deep/er/n.txt', 'file'],
      ['gone.txt', 'deleted'],
      ['src/bin.dat', 'file'],
      ['src/tool.sh', 'x'],
    ]);
    // A failing command's changes are recorded too.
    const third = await run('echo late > late.txt; exit 3');
    expect(third.result.isError).toBe(true);
    expect(third.files.map((f) => f.path)).toEqual(['late.txt']);
    // Content-addressed: one blob stream per content.
    const bin = second.files.find((f) => f.path === 'src/bin.dat') as { sha256: string };
    expect(readFileSync(join(ws, 'src/bin.dat'))).toEqual(Buffer.from('a\0b'));
    expect((await store.readStream(blobStreamId(bin.sha256))).length).toBe(1);

    const history = [first, second, third].map((c, i) => ({ type: 'ToolCallCompleted', data: { toolUseId: `c${i}`, name: 'run_command', isError: false, files: c.files } }));
    const rebuilt = join(dataDir(), 'run_cmd_rebuilt');
    expect(await restoreWorkspace(store, rebuilt, workspaceAt(history))).toEqual({ ok: true, written: 5, removed: 0 });
    expect(filesOf(rebuilt)).toEqual(filesOf(ws));
    // A stale directory is brought back to the manifest: stray files go, changed ones are rewritten.
    writeFileSync(join(rebuilt, 'stray.txt'), 'x');
    writeFileSync(join(rebuilt, 'keep.txt'), 'changed');
    expect(await restoreWorkspace(store, rebuilt, workspaceAt(history))).toEqual({ ok: true, written: 1, removed: 1 });
    expect(filesOf(rebuilt)).toEqual(filesOf(ws));
  });

  it("run_command that reads the process's secrets: its output and the files it leaves are recorded, and left on disk, with [redacted] in their place", async () => {
    // Given a process whose secrets a command can read (here: its parent's environment, as
    // /proc/$PPID/environ shows it, stood in for by a variable the command is given)
    const secret = 'sk-ant-api03-secret-for-redaction-0123';
    const store = new InMemoryEventStore();
    const ws = join(dataDir(), 'run_secret');
    mkdirSync(ws);
    // Unsandboxed (TRIAD_SANDBOX=off): a sandboxed command can neither read them nor link a file from outside.
    const registry = createDefaultToolRegistry(UNSANDBOXED);
    registry.secrets = new Redactor([secret]);
    // A file outside the workspace, hard-linked in by the command: replaced in the workspace, not written through.
    const outside = join(dataDir(), 'outside-secret.txt');
    writeFileSync(outside, `A=${secret}\nB=1\n`);
    const call = { id: 'c1', type: 'tool_use' as const, name: 'run_command', input: { command: `echo "key=${secret}" && printf 'A=${secret}\\nB=1\\n' > env.txt && cp env.txt copy.txt && ln ${outside} linked.txt` } };
    // When the executor runs it
    const { result, files } = await withRecordedEffects(store, ws, call, () => registry.invoke(call, 'executor', ['run_command'], { runId: 'run_secret', role: 'executor', workspace: ws, signal: new AbortController().signal }), { secrets: registry.secrets });
    // Then neither the output nor any recorded blob holds the secret, and the disk holds what was recorded
    expect(result.isError).toBe(false);
    expect(result.output).toContain('key=[redacted]');
    expect(result.output).not.toContain(secret);
    expect(files.map((f) => f.path)).toEqual(['copy.txt', 'env.txt', 'linked.txt']);
    expect(readFileSync(join(ws, 'env.txt'), 'utf8')).toBe('A=[redacted]\nB=1\n');
    expect(readFileSync(join(ws, 'linked.txt'), 'utf8')).toBe('A=[redacted]\nB=1\n');
    expect(readFileSync(outside, 'utf8')).toBe(`A=${secret}\nB=1\n`);
    for (const f of files) {
      const blob = await loadBlob(store, (f as { sha256: string }).sha256);
      expect(blob).toMatchObject({ ok: true });
      expect((blob as { bytes: Buffer }).bytes.toString('utf8')).toBe('A=[redacted]\nB=1\n');
    }
    const history = [{ type: 'ToolCallCompleted', data: { toolUseId: 'c1', name: 'run_command', isError: false, files } }];
    const rebuilt = join(dataDir(), 'run_secret_rebuilt');
    expect(await restoreWorkspace(store, rebuilt, workspaceAt(history))).toEqual({ ok: true, written: 3, removed: 0 });
    expect(filesOf(rebuilt)).toEqual(filesOf(ws));
  });
});
