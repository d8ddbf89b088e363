import type { Redactor } from '../../observability/log-format';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { WrongExpectedRevisionError } from '../../events/errors';
import type { EventStore } from '../../events/event-store/event-store.port';
import { readChunks } from '../../shared/read-chunks';
import { fromMachineText } from '../../shared/text';
import { resolveInWorkspace, toWorkspacePath, workspaceReplaced } from '../tools/workspace';
import { assembleBlob, blobChunks, blobStreamId, differences, diffSnapshots, effectOf, MAX_BLOB_BYTES, SNAPSHOT_LIMITS, unrebuildable, type SnapshotFile, type SnapshotLimits, type WorkspaceManifest, type WorkspaceSnapshot } from './workspace-effects';
import type { FileEffect } from '../domain/run-events';

/**
 * The workspace log's shell: walking a directory into a snapshot, storing and reading blobs through
 * the EventStore port (so every adapter holds them, with no storage of its own), recording a tool
 * call's effects, and rebuilding a directory from a manifest. The decisions are in
 * workspace-effects.ts.
 */

/** Hashes every regular file under `dir` (sorted walk; symbolic links are not followed), up to `limits`. */
export async function snapshotWorkspace(dir: string, limits: SnapshotLimits = SNAPSHOT_LIMITS): Promise<WorkspaceSnapshot> {
  const snapshot: WorkspaceSnapshot = { files: new Map(), skipped: [] };
  let bytes = 0;
  const walk = async (rel: string): Promise<boolean> => {
    let entries;
    try {
      entries = await fs.readdir(rel ? path.join(dir, rel) : dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
      throw err;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!(await walk(p))) return false;
      } else if (e.isFile()) {
        if (snapshot.files.size >= limits.maxFiles) {
          snapshot.incomplete = `the workspace has more than ${limits.maxFiles} files, the cap on a recorded comparison`;
          return false;
        }
        const file = await hashFile(path.join(dir, p));
        if (!file) continue; // removed meanwhile
        bytes += file.size;
        if (bytes > limits.maxBytes) {
          snapshot.incomplete = `the workspace holds more than ${limits.maxBytes} bytes, the cap on a recorded comparison`;
          return false;
        }
        snapshot.files.set(p, file);
      } else snapshot.skipped.push(p);
    }
    return true;
  };
  await walk('');
  return snapshot;
}

/**
 * A regular file's hash, size and executable bit; undefined when it is gone. With `keepUpTo`, also
 * the bytes it was hashed from when there are no more than that many (read once for both).
 */
export async function hashFile(file: string, keepUpTo?: number): Promise<(SnapshotFile & { bytes?: Buffer }) | undefined> {
  let stat;
  try {
    stat = await fs.lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (!stat.isFile()) return undefined;
  const hash = createHash('sha256');
  // Kept while under the cap (checked as it is read: the file may grow meanwhile).
  let kept: Buffer[] | undefined = keepUpTo !== undefined && stat.size <= keepUpTo ? [] : undefined;
  let read = 0;
  const handle = await fs.open(file, 'r');
  try {
    await readChunks(handle, stat.size, (chunk) => {
      hash.update(chunk);
      read += chunk.length;
      if (kept && read > keepUpTo!) kept = undefined;
      // Copied: the chunk's buffer is read into again.
      kept?.push(Buffer.from(chunk));
    });
  } finally {
    await handle.close();
  }
  return {
    sha256: hash.digest('hex'),
    size: read,
    ...(stat.mode & 0o111 ? { executable: true as const } : {}),
    ...(kept ? { bytes: Buffer.concat(kept, read) } : {}),
  };
}

/**
 * Stores a content in its `blob-<sha256>` stream, unless it is there already (content-addressed:
 * the same bytes are stored once, whichever runs wrote them). Chunks are appended one by one at
 * their revision, so an interrupted store is completed by the next one.
 */
export async function storeBlob(store: EventStore, bytes: Buffer): Promise<string> {
  const chunks = blobChunks(bytes);
  const sha256 = chunks[0].data.sha256;
  const stream = blobStreamId(sha256);
  const existing = await store.readStream(stream, { direction: 'backwards', maxCount: 1 });
  let next = existing.length === 0 ? 0 : existing[0].revision + 1;
  while (next < chunks.length) {
    try {
      await store.append(stream, [chunks[next]], { expectedRevision: next === 0 ? 'no_stream' : next - 1 });
      next++;
    } catch (err) {
      // Another writer stored the same content meanwhile: continue after what it wrote.
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
      const last = await store.readStream(stream, { direction: 'backwards', maxCount: 1 });
      next = last.length === 0 ? 0 : last[0].revision + 1;
    }
  }
  return sha256;
}

export async function loadBlob(store: EventStore, sha256: string): Promise<ReturnType<typeof assembleBlob>> {
  return assembleBlob(sha256, await store.readStream(blobStreamId(sha256)));
}

/**
 * Records the effects of one tool call: their blobs are stored (before the ToolCallCompleted that
 * names them, so a recorded effect never points at nothing). A content over the cap, or one that
 * changed again before it could be read, is `unrecorded`.
 */
export async function storeEffects(
  store: EventStore,
  workspace: string,
  effects: FileEffect[],
  contents?: ReadonlyMap<string, Buffer>,
  secrets?: Pick<Redactor, 'redactBytes'>,
): Promise<FileEffect[]> {
  const out: FileEffect[] = [];
  for (const effect of effects) {
    if (!('sha256' in effect) || 'unrecorded' in effect) {
      out.push(effect);
      continue;
    }
    try {
      const file = path.join(workspace, ...effect.path.split('/'));
      // The bytes the effect was hashed from, when the caller read them already; else read now.
      const bytes = contents?.get(effect.path) ?? (await fs.readFile(file));
      // A file holding one of the process's secrets is rewritten without it first, so that what
      // is recorded and what is on disk stay the same bytes (a rebuild gives this file back).
      const redacted = secrets?.redactBytes(bytes);
      if (redacted) {
        out.push(await replaceWithRedacted(store, file, effect, redacted));
        continue;
      }
      // A hard link may be another name of a file outside the workspace (left by an unsandboxed
      // command): its bytes are not recorded, and the event says so.
      if ((await fs.lstat(file)).nlink > 1) {
        out.push({ path: effect.path, unrecorded: 'the file is a hard link (it has other names, which may be outside the workspace); its content is not recorded', sha256: effect.sha256, size: effect.size });
        continue;
      }
      const sha256 = await storeBlob(store, bytes);
      if (sha256 === effect.sha256) out.push(effect);
      else out.push({ path: effect.path, unrecorded: 'the file changed while it was being recorded', sha256, size: bytes.length });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') out.push({ path: effect.path, deleted: true });
      else throw err;
    }
  }
  return out;
}

/**
 * Puts the redacted copy in the file's place (a new file renamed over it: a hard link to a file
 * outside the workspace is not written through, and a read-only file is replaced too) and records
 * it; a file that cannot be replaced is recorded as unrecorded, never with the secret.
 */
async function replaceWithRedacted(store: EventStore, file: string, effect: { path: string; executable?: true }, redacted: Buffer): Promise<FileEffect> {
  const temp = `${file}.triad-redacted-${process.pid}-${Date.now().toString(36)}`;
  try {
    const mode = (await fs.stat(file)).mode & 0o777;
    await fs.writeFile(temp, redacted, { flag: 'wx', mode });
    await fs.chmod(temp, mode);
    await fs.rename(temp, file);
  } catch (err) {
    // The failure is recorded below (as unrecorded); a temporary file left over holds the redacted copy, never the secret.
    await fs.rm(temp, { force: true }).catch(() => undefined);
    const why = (err as NodeJS.ErrnoException).code ?? 'error';
    return { path: effect.path, unrecorded: `it held a secret of this process and could not be rewritten without it (${why})` };
  }
  return { path: effect.path, sha256: await storeBlob(store, redacted), size: redacted.length, ...(effect.executable ? { executable: true as const } : {}) };
}

/**
 * The effect of one file now, for a tool that names what it wrote (write_file, edit_file), and the
 * bytes it was hashed from when they are to be stored (read once for both).
 */
export async function effectOfFile(workspace: string, relPath: string, maxBlobBytes = MAX_BLOB_BYTES): Promise<{ effect: FileEffect; bytes?: Buffer }> {
  const hashed = await hashFile(path.join(workspace, ...relPath.split('/')), maxBlobBytes);
  if (!hashed) return { effect: { path: relPath, deleted: true } };
  const { bytes, ...file } = hashed;
  const effect = effectOf(relPath, file, maxBlobBytes);
  return bytes && !('unrecorded' in effect) ? { effect, bytes } : { effect };
}

export type RestoreResult =
  | { ok: true; written: number; removed: number }
  | { ok: false; unrecoverable: { path: string; reason: string }[] };

/**
 * Makes `dir` hold exactly the manifest's files (created when missing): files that differ or are
 * missing are written from their blobs (or inline text), files the manifest does not name are
 * removed. Nothing is touched unless every file can be written: otherwise the paths that cannot,
 * and why. A directory that matches already is left as it is.
 */
export async function restoreWorkspace(store: EventStore, dir: string, manifest: WorkspaceManifest): Promise<RestoreResult> {
  await fs.mkdir(dir, { recursive: true });
  const snapshot = await snapshotWorkspace(dir, { maxFiles: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER });
  const { write, remove } = differences(manifest, snapshot);
  if (write.length === 0 && remove.length === 0) return { ok: true, written: 0, removed: 0 };
  const blocked = unrebuildable(manifest);
  if (blocked.length > 0) return { ok: false, unrecoverable: blocked };

  const contents = new Map<string, Buffer>();
  const missing: { path: string; reason: string }[] = [];
  for (const p of write) {
    const entry = manifest.files.get(p)!;
    if (!('sha256' in entry) || entry.sha256 === undefined) continue;
    if ('inline' in entry && entry.inline !== undefined) {
      contents.set(p, Buffer.from(entry.inline, 'utf8'));
      continue;
    }
    const blob = await loadBlob(store, entry.sha256);
    if (blob.ok) contents.set(p, blob.bytes);
    else missing.push({ path: p, reason: blob.reason });
  }
  if (missing.length > 0) return { ok: false, unrecoverable: missing };

  for (const p of remove) await fs.rm(path.join(dir, ...p.split('/')), { force: true, recursive: true });
  for (const p of write) {
    const target = path.join(dir, ...p.split('/'));
    const entry = manifest.files.get(p)!;
    await fs.mkdir(path.dirname(target), { recursive: true });
    // A directory (or link) where the file belongs gives way to it. Nothing there (or nothing
    // readable): the write below creates the file, or fails with the reason.
    const stat = await fs.lstat(target).catch(() => undefined);
    if (stat && !stat.isFile()) await fs.rm(target, { recursive: true, force: true });
    await fs.writeFile(target, contents.get(p)!);
    const executable = 'executable' in entry && entry.executable === true;
    const mode = (await fs.stat(target)).mode & 0o777;
    const wanted = executable ? mode | ((mode & 0o444) >> 2) : mode & ~0o111;
    if (wanted !== mode) await fs.chmod(target, wanted);
  }
  return { ok: true, written: write.length, removed: remove.length };
}

/** One line naming what cannot be rebuilt, for events and users. */
export function unrecoverableMessage(paths: readonly { path: string; reason: string }[], subject = "the run's workspace"): string {
  const shown = paths.slice(0, 5).map((p) => `${p.path === '.' ? 'the workspace' : JSON.stringify(p.path)}: ${p.reason}`);
  const more = paths.length > 5 ? ` (and ${paths.length - 5} more)` : '';
  return `${subject} cannot be rebuilt from the events: ${shown.join('; ')}${more}`;
}

/** Tools whose effect is the one file their `path` names. */
const NAMED_FILE_TOOLS = new Set(['write_file', 'edit_file']);

/**
 * Runs a tool call that may change the workspace and records its effects: the file a
 * write_file/edit_file names (when it succeeded), or the difference between snapshots of the
 * workspace before and after any other call (run_command, MCP tools), whatever its outcome. The
 * blobs are stored before this returns. When the effects cannot be known (a walk or a store that
 * fails), they are recorded as `unrecorded`, never left out.
 */
export async function withRecordedEffects<T extends { isError: boolean }>(
  store: EventStore,
  workspace: string,
  call: { name: string; input: Record<string, unknown> },
  run: () => Promise<T>,
  options: { maxBlobBytes?: number; limits?: SnapshotLimits; realWorkspace?: string; secrets?: Pick<Redactor, 'redactBytes'> } = {},
): Promise<{ result: T; files: FileEffect[] }> {
  const input = fromMachineText(call.input);
  const named = NAMED_FILE_TOOLS.has(call.name) && typeof input.path === 'string' ? input.path : undefined;
  // The directory the run's tools were confined to (resolved when the drive started). A workspace
  // that a command replaced by a link is not walked through it: its effects are unrecorded.
  const root = options.realWorkspace ?? workspace;
  const snapshot = async () => {
    if (options.realWorkspace !== undefined && (await workspaceReplaced(options.realWorkspace))) {
      throw Object.assign(new Error('the workspace was replaced'), { name: 'WorkspaceReplaced' });
    }
    return snapshotWorkspace(root, options.limits);
  };
  let before: WorkspaceSnapshot | Error | undefined;
  if (named === undefined) before = await snapshot().catch((err: unknown) => err as Error);
  const result = await run();
  try {
    if (before instanceof Error) throw before;
    let effects: FileEffect[];
    // Where the effects' paths are relative to: the named file's real workspace, or the snapshot's root.
    let base = root;
    let contents: Map<string, Buffer> | undefined;
    if (named !== undefined) {
      if (result.isError) return { result, files: [] };
      base = options.realWorkspace ?? (await fs.realpath(workspace));
      // Resolved as the tool resolved it (an absolute path may name either spelling of the workspace).
      const written = await resolveInWorkspace(workspace, named, { realRoot: base });
      const { effect, bytes } = await effectOfFile(base, toWorkspacePath(base, written), options.maxBlobBytes);
      effects = [effect];
      if (bytes) contents = new Map([[effect.path, bytes]]);
    } else {
      effects = diffSnapshots(before!, await snapshot(), options.maxBlobBytes);
    }
    return { result, files: await storeEffects(store, base, effects, contents, options.secrets) };
  } catch (err) {
    // Named by its code, never by a message that could show the host's layout.
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).name ?? 'error';
    return { result, files: [{ path: '.', unrecorded: `the call's effects could not be recorded (${why})` }] };
  }
}

/** Whether `dir` is missing or holds nothing. */
export async function isEmptyDirectory(dir: string): Promise<boolean> {
  try {
    return (await fs.readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}
