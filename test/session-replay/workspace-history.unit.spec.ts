import type { RecordedEvent } from '../../src/events/event-store/event-store.port';
import { resolveBlobContents, workspaceHistory } from '../../src/session-replay/workspace-history';

let revision = 0;
const ev = (type: string, data: Record<string, unknown>): RecordedEvent =>
  ({ id: `e${revision}`, type, streamId: 'run-r', revision: revision++, position: revision, data, metadata: {}, recordedAt: '2026-01-01T00:00:00Z' }) as unknown as RecordedEvent;
const call = (id: string, name: string, input: Record<string, unknown>, isError = false) => [
  ev('ToolCallRequested', { toolUseId: id, name, input, role: 'executor', turn: 1 }),
  ev('ToolCallCompleted', { toolUseId: id, name, isError, output: 'ok', role: 'executor', turn: 1 }),
];

describe('the workspace rebuilt from a run\'s events', () => {
  it('given writes and edits over two iterations, then each iteration shows its files as submitted', () => {
    const history = [
      ev('RunLaunched', {}),
      ...call('t1', 'write_file', { path: 'hello.txt', content: 'Hello\n' }),
      ...call('t2', 'write_file', { path: './bye.txt', content: 'Bye\n' }),
      ...call('t3', 'write_file', { path: 'bad.txt', content: 'x' }, true),
      ev('WorkSubmitted', { iteration: 1 }),
      ev('IterationStarted', { iteration: 2 }),
      ...call('t4', 'edit_file', { path: 'hello.txt', old: 'Hello', new: 'Hello, world' }),
      ...call('t5', 'run_command', { command: 'touch x' }),
      ...call('t6', 'read_file', { path: 'hello.txt' }),
      ev('WorkSubmitted', { iteration: 2 }),
    ];
    const { iterations, notReproduced } = workspaceHistory(history);
    expect(iterations.map((s) => [s.iteration, s.submitted])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(iterations[0].files).toEqual([
      { path: 'bye.txt', content: 'Bye\n' },
      { path: 'hello.txt', content: 'Hello\n' },
    ]);
    expect(iterations[1].files).toEqual([
      { path: 'bye.txt', content: 'Bye\n' },
      { path: 'hello.txt', content: 'Hello, world\n' },
    ]);
    expect(notReproduced).toEqual({ run_command: 1 });
  });

  it('given work not yet submitted, then the files so far are shown as the current iteration', () => {
    const { iterations } = workspaceHistory([ev('RunLaunched', {}), ...call('a', 'write_file', { path: 'a.txt', content: 'A' })]);
    expect(iterations).toEqual([{ iteration: 1, submitted: false, files: [{ path: 'a.txt', content: 'A' }] }]);
  });

  it('given run_command calls with recorded effects, then their files are shown from the blobs and only unrecorded changes are named', async () => {
    const withFiles = (id: string, files: unknown[]) => [
      ev('ToolCallRequested', { toolUseId: id, name: 'run_command', input: { command: 'make' }, role: 'executor', turn: 1 }),
      ev('ToolCallCompleted', { toolUseId: id, name: 'run_command', isError: false, output: 'ok', role: 'executor', turn: 1, files }),
    ];
    const history = [
      ev('RunLaunched', {}),
      ...call('w', 'write_file', { path: 'gone.txt', content: 'x' }),
      ...withFiles('c1', [{ path: 'out/a.txt', sha256: 'aa', size: 2 }, { path: 'gone.txt', deleted: true }]),
      ...withFiles('c2', [{ path: 'big.bin', unrecorded: 'over the cap', sha256: 'bb', size: 99 }]),
    ];
    const view = workspaceHistory(history);
    expect(view.iterations[0].files).toEqual([{ path: 'out/a.txt', content: '', sha256: 'aa' }]);
    expect(view.notReproduced).toEqual({ run_command: 1 });
    const blobs: Record<string, Buffer> = { aa: Buffer.from('A\n') };
    await resolveBlobContents(view, async (sha) => blobs[sha]);
    expect(view.iterations[0].files).toEqual([{ path: 'out/a.txt', content: 'A\n' }]);
  });
});
