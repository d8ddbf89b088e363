import { createHash } from 'node:crypto';
import type { NewEvent, RecordedEvent } from '../../events/event-store/event-store.port';
import { fromMachineText } from '../../shared/text';
import type { FileEffect } from '../domain/run-events';

/**
 * The workspace as part of the log (pure core). Every tool call that may change the workspace
 * records its file effects on its `ToolCallCompleted` event (`files`): each changed path with the
 * sha256, size and executable bit of its new content, or its deletion. The contents themselves are
 * stored once per distinct content, content-addressed, in a `blob-<sha256>` stream of the same
 * event store (chunked under the store's event size limit). Folding the effects of a run's history
 * gives the manifest of its workspace at any point (`workspaceAt`), from which any process rebuilds
 * the directory byte for byte.
 *
 * A content over `MAX_BLOB_BYTES`, or a workspace too large to compare (`SNAPSHOT_LIMITS`), is
 * recorded as `unrecorded` (with its hash when known): the log then says the workspace cannot be
 * rebuilt exactly, and a rebuild refuses rather than guess.
 */

/** What the manifest knows of one file. */
export type ManifestEntry =
  | { sha256: string; size: number; executable?: true; /** Legacy runs: the text a write_file wrote (no blob). */ inline?: string }
  | { unrecorded: string; sha256?: string; size?: number };

export interface WorkspaceManifest {
  files: Map<string, ManifestEntry>;
  /**
   * Calls that may have changed the workspace but recorded no effects (runs recorded before effects
   * were: `run_command: 2`). Their changes are unknown.
   */
  notReproduced: Record<string, number>;
  /** Whether any call recorded its effects (false for runs recorded before effects were). */
  recorded: boolean;
}

/** A file's content may be stored up to this size; above it the effect is `unrecorded` (with its hash). */
export const MAX_BLOB_BYTES = 8 * 1024 * 1024;
/**
 * Bytes per blob chunk event: base64 makes them 4/3 larger, so a chunk event (~342 KiB) stays well
 * under the store's 1 MiB event limit (`DEFAULT_MAX_EVENT_BYTES`), whichever adapter holds it, and
 * a page of events read by a projection stays bounded.
 */
export const BLOB_CHUNK_BYTES = 256 * 1024;

export interface SnapshotLimits {
  /** Files compared per snapshot; beyond, the snapshot is incomplete. */
  maxFiles: number;
  /** Bytes hashed per snapshot; beyond, the snapshot is incomplete. */
  maxBytes: number;
}

/**
 * How much of a workspace the before/after comparison around a `run_command` (or MCP tool) call
 * walks and hashes: it bounds the time a call spends on it (both walks hash every file).
 */
export const SNAPSHOT_LIMITS: Readonly<SnapshotLimits> = Object.freeze({ maxFiles: 20_000, maxBytes: 64 * 1024 * 1024 });

/**
 * Changed paths recorded per call. The list is part of one ToolCallCompleted event, which must stay
 * under the store's 1 MiB event limit with the call's output: 2,000 paths of ~150 bytes stay under
 * a third of it. A call that changes more is recorded as one `unrecorded` effect.
 */
export const MAX_EFFECTS_PER_CALL = 2_000;

/** A file as a snapshot of the directory saw it. */
export interface SnapshotFile {
  sha256: string;
  size: number;
  executable?: true;
}

export interface WorkspaceSnapshot {
  files: Map<string, SnapshotFile>;
  /** Set when the walk stopped at a limit or met something it cannot record (why). */
  incomplete?: string;
  /** Paths that are neither regular files nor directories (symbolic links, sockets…): not recorded. */
  skipped: string[];
}

export const BLOB_STREAM_PREFIX = 'blob-';
export const blobStreamId = (sha256: string): string => `${BLOB_STREAM_PREFIX}${sha256}`;
export const BLOB_CHUNK_EVENT = 'WorkspaceBlobChunk';

export interface BlobChunkData {
  sha256: string;
  /** The whole content's size in bytes. */
  size: number;
  index: number;
  count: number;
  /** This chunk's bytes, base64. */
  data: string;
}

export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

// ---------------------------------------------------------------------------------------------
// Blobs

/** The chunk events of a content, in order (one empty chunk for an empty content). */
export function blobChunks(bytes: Buffer, chunkBytes = BLOB_CHUNK_BYTES): NewEvent<BlobChunkData>[] {
  const sha256 = sha256Of(bytes);
  const count = Math.max(1, Math.ceil(bytes.length / chunkBytes));
  const out: NewEvent<BlobChunkData>[] = [];
  for (let index = 0; index < count; index++) {
    const data = bytes.subarray(index * chunkBytes, (index + 1) * chunkBytes).toString('base64');
    out.push({ type: BLOB_CHUNK_EVENT, data: { sha256, size: bytes.length, index, count, data } });
  }
  return out;
}

export type AssembledBlob = { ok: true; bytes: Buffer } | { ok: false; reason: string };

/** The content from a blob stream's events, checked against its hash. */
export function assembleBlob(sha256: string, events: readonly { type: string; data: unknown }[]): AssembledBlob {
  const chunks = events.filter((e) => e.type === BLOB_CHUNK_EVENT).map((e) => e.data as BlobChunkData);
  if (chunks.length === 0) return { ok: false, reason: 'its content is not in the event store' };
  const count = chunks[0].count;
  if (chunks.length < count) return { ok: false, reason: `its content is incomplete in the event store (${chunks.length} of ${count} chunks)` };
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    if (chunks[i].index !== i || chunks[i].sha256 !== sha256) return { ok: false, reason: 'its content in the event store is malformed' };
    parts.push(Buffer.from(chunks[i].data, 'base64'));
  }
  const bytes = Buffer.concat(parts);
  if (sha256Of(bytes) !== sha256) return { ok: false, reason: 'its content in the event store does not match its hash' };
  return { ok: true, bytes };
}

// ---------------------------------------------------------------------------------------------
// The fold

/** Tools that never change the workspace (and the submit tools). */
const READ_ONLY_TOOLS = new Set(['read_file', 'list_files', 'search_files', 'submit_plan', 'submit_work', 'submit_verdict']);

/**
 * Tools whose calls change nothing of their own in the workspace, so that a call of theirs with no
 * `files` is no gap in the log: the built-in read-only tools, and `spawn_sub_agent`, whose effects
 * are those of its sub-agent's own calls (SubAgentToolCompleted.files). Other read-only tools (MCP
 * tools annotated read-only) record `files: []`: the fold cannot know them by name.
 */
export function hasNoOwnEffects(name: string): boolean {
  return READ_ONLY_TOOLS.has(name) || name === 'spawn_sub_agent';
}

export function emptyManifest(): WorkspaceManifest {
  return { files: new Map(), notReproduced: {}, recorded: false };
}

/** Applies one call's effects to a manifest (mutating it). */
export function applyEffects(manifest: WorkspaceManifest, effects: readonly FileEffect[]): WorkspaceManifest {
  manifest.recorded = true;
  for (const effect of effects) {
    if ('deleted' in effect) manifest.files.delete(effect.path);
    else if ('unrecorded' in effect) {
      manifest.files.set(effect.path, {
        unrecorded: effect.unrecorded,
        ...(effect.sha256 !== undefined ? { sha256: effect.sha256 } : {}),
        ...(effect.size !== undefined ? { size: effect.size } : {}),
      });
    } else manifest.files.set(effect.path, { sha256: effect.sha256, size: effect.size, ...(effect.executable ? { executable: true as const } : {}) });
  }
  return manifest;
}

/**
 * The workspace's manifest after `history` (a run's events, a fork's inherited ones first; pass a
 * prefix for an earlier point): the recorded effects of every tool call, in order. Runs recorded
 * before effects were: a successful `write_file` is known from its input (kept inline), an
 * `edit_file` is re-applied to it, and anything else that may have changed the workspace is
 * counted in `notReproduced`.
 */
export function workspaceAt(history: Iterable<Pick<RecordedEvent, 'type' | 'data'>>): WorkspaceManifest {
  const manifest = emptyManifest();
  const requested = new Map<string, { name: string; input: Record<string, unknown> }>();
  for (const e of history) {
    const d = e.data as Record<string, unknown>;
    if (e.type === 'ToolCallRequested') requested.set(d.toolUseId as string, { name: d.name as string, input: d.input as Record<string, unknown> });
    else if (e.type === 'SubAgentToolCompleted') {
      // A sub-agent works in its run's workspace; its calls record their effects the same way.
      if (Array.isArray(d.files)) applyEffects(manifest, d.files as FileEffect[]);
      else if (!hasNoOwnEffects(d.name as string) && !d.isError && !d.outcomeUnknown) manifest.notReproduced[d.name as string] = (manifest.notReproduced[d.name as string] ?? 0) + 1;
    } else if (e.type === 'ToolCallCompleted') {
      if (Array.isArray(d.files)) {
        applyEffects(manifest, d.files as FileEffect[]);
        continue;
      }
      const name = d.name as string;
      if (hasNoOwnEffects(name) || d.isError) continue;
      const call = requested.get(d.toolUseId as string);
      if (!call || !applyLegacyCall(manifest, call.name, fromMachineText(call.input))) {
        manifest.notReproduced[name] = (manifest.notReproduced[name] ?? 0) + 1;
      }
    }
  }
  return manifest;
}

/** A write_file or edit_file recorded before effects were, re-applied from its input; false when it cannot be. */
function applyLegacyCall(manifest: WorkspaceManifest, name: string, input: Record<string, unknown>): boolean {
  const path = typeof input.path === 'string' ? normalisePath(input.path) : undefined;
  if (path === undefined) return false;
  if (name === 'write_file' && typeof input.content === 'string') {
    manifest.files.set(path, inlineEntry(input.content));
    return true;
  }
  if (name === 'edit_file') {
    const before = manifest.files.get(path);
    if (!before || !('inline' in before) || before.inline === undefined) return false;
    const edited = applyEdit(before.inline, input);
    if (edited === undefined) return false;
    manifest.files.set(path, inlineEntry(edited));
    return true;
  }
  return false;
}

function inlineEntry(text: string): ManifestEntry {
  const bytes = Buffer.from(text, 'utf8');
  return { sha256: sha256Of(bytes), size: bytes.length, inline: text };
}

/** edit_file's replacement, as the tool does it. */
export function applyEdit(text: string, input: Record<string, unknown>): string | undefined {
  const oldText = input.old;
  const newText = input.new;
  if (typeof oldText !== 'string' || typeof newText !== 'string' || oldText === '') return undefined;
  const at = text.indexOf(oldText);
  if (at < 0) return undefined;
  return input.replaceAll === true ? text.split(oldText).join(newText) : text.slice(0, at) + newText + text.slice(at + oldText.length);
}

/** A model-given relative path in the spelling of the manifest ('a/b.txt'). */
export function normalisePath(userPath: string): string {
  const parts: string[] = [];
  for (const part of userPath.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

// ---------------------------------------------------------------------------------------------
// Comparing

/**
 * The effects that turn `before` into `after` (a snapshot before and after a tool call), sorted by
 * path. Contents over `maxBlobBytes` come out `unrecorded` with their hash.
 */
export function diffSnapshots(before: WorkspaceSnapshot, after: WorkspaceSnapshot, maxBlobBytes = MAX_BLOB_BYTES): FileEffect[] {
  const effects: FileEffect[] = [];
  for (const [path, file] of after.files) {
    const was = before.files.get(path);
    if (was && was.sha256 === file.sha256 && Boolean(was.executable) === Boolean(file.executable)) continue;
    effects.push(effectOf(path, file, maxBlobBytes));
  }
  for (const path of before.files.keys()) {
    // A path a truncated walk did not reach is not known to be deleted.
    if (!after.files.has(path) && !after.incomplete) effects.push({ path, deleted: true });
  }
  if (after.incomplete) effects.push({ path: '.', unrecorded: after.incomplete });
  const skippedBefore = new Set(before.skipped);
  for (const path of after.skipped) if (!skippedBefore.has(path)) effects.push({ path, unrecorded: 'not a regular file (a symbolic link or special file)' });
  if (effects.length > MAX_EFFECTS_PER_CALL) {
    return [{ path: '.', unrecorded: `${effects.length} paths changed, over the cap of ${MAX_EFFECTS_PER_CALL} recorded changes per call` }];
  }
  return effects.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The effect of a file now holding `file`'s content. */
export function effectOf(path: string, file: SnapshotFile, maxBlobBytes = MAX_BLOB_BYTES): FileEffect {
  if (file.size > maxBlobBytes) return { path, unrecorded: `${file.size} bytes, over the ${maxBlobBytes}-byte cap on recorded files`, sha256: file.sha256, size: file.size };
  return { path, sha256: file.sha256, size: file.size, ...(file.executable ? { executable: true as const } : {}) };
}

/** Where a directory's snapshot differs from a manifest: paths to write (or that differ) and paths to remove. */
export function differences(manifest: WorkspaceManifest, snapshot: WorkspaceSnapshot): { write: string[]; remove: string[] } {
  const write: string[] = [];
  const remove: string[] = [];
  for (const [path, entry] of manifest.files) {
    const file = snapshot.files.get(path);
    if (!file || !('sha256' in entry) || entry.sha256 !== file.sha256 || ('unrecorded' in entry ? false : Boolean(entry.executable) !== Boolean(file.executable))) {
      write.push(path);
    }
  }
  for (const path of snapshot.files.keys()) if (!manifest.files.has(path)) remove.push(path);
  return { write: write.sort(), remove: remove.sort() };
}

/** What stops a manifest from being rebuilt exactly, path by path (before any blob is read). */
export function unrebuildable(manifest: WorkspaceManifest): { path: string; reason: string }[] {
  const out: { path: string; reason: string }[] = [];
  for (const [path, entry] of manifest.files) if ('unrecorded' in entry) out.push({ path, reason: entry.unrecorded });
  for (const [name, n] of Object.entries(manifest.notReproduced)) out.push({ path: '.', reason: `${n} ${name} call(s) recorded before file effects were: their changes are unknown` });
  return out;
}
