import { assembleBlob, blobChunks, differences, diffSnapshots, MAX_EFFECTS_PER_CALL, sha256Of, unrebuildable, workspaceAt, type SnapshotFile, type WorkspaceSnapshot } from '../../../src/team/workspace/workspace-effects';
import type { FileEffect } from '../../../src/team/domain/run-events';

const file = (text: string, executable = false): SnapshotFile => {
  const bytes = Buffer.from(text);
  return { sha256: sha256Of(bytes), size: bytes.length, ...(executable ? { executable: true as const } : {}) };
};
const snap = (files: Record<string, SnapshotFile>, extra: Partial<WorkspaceSnapshot> = {}): WorkspaceSnapshot => ({
  files: new Map(Object.entries(files)),
  skipped: [],
  ...extra,
});

let seq = 0;
/** A tool call's events: requested, then completed with `files` (or without, as recorded before effects were). */
const call = (name: string, input: Record<string, unknown>, files?: FileEffect[], isError = false) => {
  const toolUseId = `t${++seq}`;
  return [
    { type: 'ToolCallRequested', data: { toolUseId, name, input } },
    { type: 'ToolCallCompleted', data: { toolUseId, name, isError, output: '', ...(files ? { files } : {}) } },
  ];
};
const effect = (path: string, text: string): FileEffect => ({ path, ...file(text) });

describe('workspaceAt: the workspace a run\'s events describe', () => {
  it('given a spawn whose sub-agent wrote a file, and a read-only MCP call, then the workspace is exactly what the sub-agent recorded: no gap', () => {
    const history = [
      ...call('spawn_sub_agent', { role: 'coder', task: 'write it' }),
      { type: 'SubAgentToolCompleted', data: { path: 'executor/1', toolUseId: 's1', name: 'write_file', isError: false, output: '', files: [effect('hello.txt', 'Hello')] } },
      { type: 'SubAgentToolCompleted', data: { path: 'executor/1', toolUseId: 's2', name: 'read_file', isError: false, output: 'Hello' } },
      ...call('mcp__fs__read_text_file', { path: 'hello.txt' }, []),
    ];
    const manifest = workspaceAt(history);
    expect([...manifest.files.keys()]).toEqual(['hello.txt']);
    expect(manifest.notReproduced).toEqual({});
    expect(unrebuildable(manifest)).toEqual([]);
  });

  it('given a sub-agent tool call that may have changed the workspace but recorded nothing, then it is a gap', () => {
    const history = [{ type: 'SubAgentToolCompleted', data: { path: 'executor/1', toolUseId: 's1', name: 'run_command', isError: false, output: '' } }];
    expect(workspaceAt(history).notReproduced).toEqual({ run_command: 1 });
  });

  it('given recorded effects, folds them in order: writes, overwrites, deletions', () => {
    const history = [
      ...call('write_file', { path: 'a.txt', content: 'one' }, [effect('a.txt', 'one')]),
      ...call('run_command', { command: 'x' }, [effect('b/c.txt', 'two'), { path: 'a.txt', deleted: true }]),
      ...call('edit_file', { path: 'b/c.txt', old: 'two', new: 'three' }, [effect('b/c.txt', 'three')]),
    ];
    const m = workspaceAt(history);
    expect(m.recorded).toBe(true);
    expect([...m.files.entries()]).toEqual([['b/c.txt', file('three')]]);
    expect(unrebuildable(m)).toEqual([]);
  });

  it('given a prefix of the history, answers the workspace at that point', () => {
    const history = [...call('write_file', { path: 'a', content: '1' }, [effect('a', '1')]), ...call('write_file', { path: 'a', content: '2' }, [effect('a', '2')])];
    expect(workspaceAt(history.slice(0, 2)).files.get('a')).toEqual(file('1'));
    expect(workspaceAt(history).files.get('a')).toEqual(file('2'));
  });

  it('given an unrecorded effect, keeps its hash and says the workspace cannot be rebuilt there', () => {
    const big = { path: 'big.bin', unrecorded: 'over the cap', sha256: 'ab', size: 9 };
    const m = workspaceAt(call('run_command', { command: 'x' }, [big]));
    expect(m.files.get('big.bin')).toEqual({ unrecorded: 'over the cap', sha256: 'ab', size: 9 });
    expect(unrebuildable(m)).toEqual([{ path: 'big.bin', reason: 'over the cap' }]);
  });

  it('given a run recorded before effects were, rebuilds write_file and edit_file from their input and names the rest', () => {
    const m = workspaceAt([
      ...call('write_file', { path: './notes/a.md', content: 'hello world' }),
      ...call('edit_file', { path: 'notes/a.md', old: 'world', new: 'there' }),
      ...call('run_command', { command: 'make' }),
      ...call('read_file', { path: 'notes/a.md' }),
      ...call('write_file', { path: 'failed.txt', content: 'x' }, undefined, true),
    ]);
    expect(m.recorded).toBe(false);
    expect(m.files.get('notes/a.md')).toEqual({ ...file('hello there'), inline: 'hello there' });
    expect(m.files.has('failed.txt')).toBe(false);
    expect(m.notReproduced).toEqual({ run_command: 1 });
  });
});

describe('diffSnapshots: what a call changed', () => {
  it('given files added, changed, made executable and removed, answers their effects sorted by path', () => {
    const before = snap({ keep: file('k'), change: file('old'), gone: file('g'), script: file('s') });
    const after = snap({ keep: file('k'), change: file('new'), added: file('a'), script: file('s', true) });
    expect(diffSnapshots(before, after)).toEqual([
      { path: 'added', ...file('a') },
      { path: 'change', ...file('new') },
      { path: 'gone', deleted: true },
      { path: 'script', ...file('s', true) },
    ]);
  });

  it('given no change, answers nothing', () => {
    expect(diffSnapshots(snap({ a: file('a') }), snap({ a: file('a') }))).toEqual([]);
  });

  it('given a content over the cap, records it unrecorded with its hash', () => {
    const big = file('0123456789');
    expect(diffSnapshots(snap({}), snap({ big }), 5)).toEqual([{ path: 'big', unrecorded: expect.stringContaining('over the 5-byte cap'), sha256: big.sha256, size: 10 }]);
  });

  it('given a walk stopped at its cap, deletes nothing it did not see and marks the workspace unrecorded', () => {
    const effects = diffSnapshots(snap({ a: file('a'), b: file('b') }), snap({ a: file('a2') }, { incomplete: 'too many files' }));
    expect(effects).toEqual([{ path: '.', unrecorded: 'too many files' }, { path: 'a', ...file('a2') }]);
  });

  it('given a new symbolic link, records it as unrecorded', () => {
    expect(diffSnapshots(snap({}), snap({}, { skipped: ['link'] }))).toEqual([{ path: 'link', unrecorded: expect.stringContaining('not a regular file') }]);
  });

  it('given more changes than one event may list, records one unrecorded effect', () => {
    const after = snap(Object.fromEntries(Array.from({ length: MAX_EFFECTS_PER_CALL + 1 }, (_, i) => [`f${i}`, file(String(i))])));
    expect(diffSnapshots(snap({}), after)).toEqual([{ path: '.', unrecorded: expect.stringContaining('over the cap') }]);
  });
});

describe('differences: a directory against a manifest', () => {
  it('given stale, missing and extra files, answers what to write and what to remove', () => {
    const m = workspaceAt([...call('run_command', {}, [effect('a', '1'), effect('b', '2'), { path: 'x', ...file('x'), executable: true }])]);
    expect(differences(m, snap({ a: file('1'), b: file('old'), x: file('x'), extra: file('e') }))).toEqual({ write: ['b', 'x'], remove: ['extra'] });
    expect(differences(m, snap({ a: file('1'), b: file('2'), x: file('x', true) }))).toEqual({ write: [], remove: [] });
  });
});

describe('blobs: content-addressed, chunked under the event size limit', () => {
  it('round-trips a content through its chunks, checked against its hash', () => {
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const chunks = blobChunks(bytes, 300);
    expect(chunks.map((c) => c.data.index)).toEqual([0, 1, 2, 3]);
    expect(chunks.every((c) => c.data.sha256 === sha256Of(bytes) && c.data.count === 4)).toBe(true);
    const back = assembleBlob(sha256Of(bytes), chunks);
    expect(back.ok && back.bytes.equals(bytes)).toBe(true);
  });

  it('stores an empty content as one empty chunk', () => {
    const chunks = blobChunks(Buffer.alloc(0));
    expect(chunks).toHaveLength(1);
    expect(assembleBlob(sha256Of(Buffer.alloc(0)), chunks)).toEqual({ ok: true, bytes: Buffer.alloc(0) });
  });

  it('says when a blob is missing, incomplete or corrupt', () => {
    const bytes = Buffer.from('hello');
    const sha = sha256Of(bytes);
    expect(assembleBlob(sha, [])).toEqual({ ok: false, reason: expect.stringContaining('not in the event store') });
    expect(assembleBlob(sha, blobChunks(Buffer.from('hello world'), 4).slice(0, 2))).toEqual({ ok: false, reason: expect.stringContaining('incomplete') });
    const forged = blobChunks(bytes).map((c) => ({ ...c, data: { ...c.data, data: Buffer.from('HELLO').toString('base64') } }));
    expect(assembleBlob(sha, forged)).toEqual({ ok: false, reason: expect.stringContaining('does not match') });
  });
});
