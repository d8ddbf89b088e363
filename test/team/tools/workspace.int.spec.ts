import { mkdirSync, readdirSync, realpathSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createWorkspace,
  InvalidRunIdError,
  resolveInWorkspace,
  toWorkspacePath,
  WorkspaceEscapeError,
  WorkspaceGoneError,
} from '../../../src/team/tools/workspace';
import { scratchDir } from './tool-test-support';

describe('resolveInWorkspace', () => {
  let root: ReturnType<typeof scratchDir>;
  let ws: string;
  let outside: string;

  beforeEach(() => {
    root = scratchDir('triad-ws-');
    ws = join(root.path, 'run-1');
    outside = join(root.path, 'outside');
    mkdirSync(join(ws, 'src'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(ws, 'src', 'a.txt'), 'a');
    writeFileSync(join(outside, 'secret.txt'), 'secret');
  });
  afterEach(() => root.remove());

  const refused = async (userPath: string, forWrite = false): Promise<WorkspaceEscapeError> => {
    const error = await resolveInWorkspace(ws, userPath, { forWrite }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(WorkspaceEscapeError);
    const escape = error as WorkspaceEscapeError;
    expect(escape.name).toBe('WorkspaceEscapeError');
    expect(escape.userPath).toBe(userPath);
    // The message names the user's path, not where the workspace lives on the host.
    if (!userPath.includes(root.path)) expect(escape.message).not.toContain(root.path);
    return escape;
  };

  it('resolves relative paths, existing or not, inside the workspace', async () => {
    await expect(resolveInWorkspace(ws, 'src/a.txt')).resolves.toBe(join(ws, 'src', 'a.txt'));
    await expect(resolveInWorkspace(ws, './src/../src/a.txt')).resolves.toBe(join(ws, 'src', 'a.txt'));
    await expect(resolveInWorkspace(ws, 'new/dir/file.txt', { forWrite: true })).resolves.toBe(join(ws, 'new', 'dir', 'file.txt'));
    await expect(resolveInWorkspace(ws, '.')).resolves.toBe(ws);
  });

  it('accepts an absolute path that lies inside the workspace', async () => {
    await expect(resolveInWorkspace(ws, join(ws, 'src', 'a.txt'))).resolves.toBe(join(ws, 'src', 'a.txt'));
  });

  it('refuses .. escapes, absolute paths outside and NUL bytes', async () => {
    expect((await refused('../outside/secret.txt')).message).toContain('"../outside/secret.txt" is outside the workspace');
    await refused('src/../../outside');
    await refused('..');
    await refused('/etc/passwd');
    await refused(join(outside, 'secret.txt'));
    await refused(`${ws}-sibling/x`);
    expect((await refused('src/a.txt\0.png')).message).toContain('NUL');
  });

  it('refuses a symlink inside the workspace that points outside, for reads and writes', async () => {
    symlinkSync('/etc', join(ws, 'etc'));
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'secret-link'));
    symlinkSync(outside, join(ws, 'src', 'out'));
    await refused('etc/passwd');
    await refused('etc');
    await refused('etc/new-file', true);
    await refused('secret-link');
    await refused('secret-link', true);
    await refused('src/out/secret.txt');
    await refused('src/out/deeper/new.txt', true);
    expect((await refused('src/out/secret.txt')).message).toContain('symbolic link');
  });

  it('refuses dangling and looping links', async () => {
    symlinkSync(join(outside, 'not-yet'), join(ws, 'dangling'));
    symlinkSync('loop-b', join(ws, 'loop-a'));
    symlinkSync('loop-a', join(ws, 'loop-b'));
    await refused('dangling', true);
    await refused('dangling/child.txt', true);
    await refused('loop-a/x');
  });

  it('follows a symlink that stays inside the workspace to its target', async () => {
    symlinkSync(join(ws, 'src'), join(ws, 'source'));
    symlinkSync('src/a.txt', join(ws, 'alias.txt'));
    await expect(resolveInWorkspace(ws, 'source/a.txt')).resolves.toBe(join(ws, 'src', 'a.txt'));
    await expect(resolveInWorkspace(ws, 'alias.txt', { forWrite: true })).resolves.toBe(join(ws, 'src', 'a.txt'));
  });

  it('works when the workspace itself is reached through a symlink', async () => {
    const via = join(root.path, 'via');
    symlinkSync(ws, via);
    await expect(resolveInWorkspace(via, 'src/a.txt')).resolves.toBe(join(ws, 'src', 'a.txt'));
    await expect(resolveInWorkspace(via, join(via, 'src', 'a.txt'))).resolves.toBe(join(ws, 'src', 'a.txt'));
  });

  it('confines paths to a real root resolved earlier, even once the workspace path is re-pointed outside', async () => {
    const via = join(root.path, 'via');
    symlinkSync(ws, via);
    const realRoot = realpathSync(via);
    await expect(resolveInWorkspace(via, 'src/a.txt', { realRoot })).resolves.toBe(join(ws, 'src', 'a.txt'));
    // The workspace's path now leads elsewhere; its directory (the real root) is replaced by a link too.
    unlinkSync(via);
    symlinkSync(outside, via);
    renameSync(ws, join(root.path, 'moved'));
    symlinkSync(outside, ws);
    for (const userPath of ['secret.txt', '.', join(via, 'secret.txt')]) {
      const error = await resolveInWorkspace(via, userPath, { realRoot }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(WorkspaceEscapeError);
    }
  });

  it('given a real root resolved before the workspace was removed, it fails as a workspace resolved now does: the workspace is gone', async () => {
    const realRoot = realpathSync(ws);
    rmSync(ws, { recursive: true });
    for (const forWrite of [false, true]) {
      await expect(resolveInWorkspace(ws, 'a.txt', { forWrite })).rejects.toBeInstanceOf(WorkspaceGoneError);
      await expect(resolveInWorkspace(ws, 'a.txt', { realRoot, forWrite })).rejects.toBeInstanceOf(WorkspaceGoneError);
    }
  });

  it('refuses the workspace directory itself as a write target', async () => {
    await refused('.', true);
    await refused('src/..', true);
  });

  it('spells resolved paths relative to the workspace', () => {
    expect(toWorkspacePath(ws, join(ws, 'src', 'a.txt'))).toBe('src/a.txt');
    expect(toWorkspacePath(ws, ws)).toBe('.');
  });
});

describe('createWorkspace', () => {
  let root: ReturnType<typeof scratchDir>;
  beforeEach(() => (root = scratchDir('triad-wsroot-')));
  afterEach(() => root.remove());

  it('creates <root>/<runId> and returns its real path; creating it again reuses it', async () => {
    const dir = await createWorkspace(join(root.path, 'workspaces'), 'run_01-AB');
    expect(dir).toBe(realpathSync(join(root.path, 'workspaces', 'run_01-AB')));
    writeFileSync(join(dir, 'kept.txt'), 'x');
    await expect(createWorkspace(join(root.path, 'workspaces'), 'run_01-AB')).resolves.toBe(dir);
    expect(readdirSync(dir)).toEqual(['kept.txt']);
  });

  it.each(['', '.', '..', '../escape', 'a/b', 'a b', 'run\0', 'r'.repeat(129)])('rejects the run id %j', async (runId) => {
    await expect(createWorkspace(root.path, runId)).rejects.toBeInstanceOf(InvalidRunIdError);
    expect(readdirSync(root.path)).toEqual([]);
  });

  it('refuses a run path that is a planted symlink', async () => {
    const elsewhere = join(root.path, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(root.path, 'run-2'));
    await expect(createWorkspace(root.path, 'run-2')).rejects.toThrow('not a plain directory');
  });

  it('refuses a run path that is a dangling link or a file, and creates a missing root', async () => {
    symlinkSync(join(root.path, 'nowhere'), join(root.path, 'run-3'));
    writeFileSync(join(root.path, 'run-4'), 'x');
    await expect(createWorkspace(root.path, 'run-3')).rejects.toThrow('not a plain directory');
    await expect(createWorkspace(root.path, 'run-4')).rejects.toThrow('not a plain directory');
    const made = await createWorkspace(join(root.path, 'a', 'b'), 'run-5');
    expect(made).toBe(realpathSync(join(root.path, 'a', 'b', 'run-5')));
  });
});
