import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The search of search_files, run on a worker thread that search-files.ts starts for each call.
 *
 * Why a thread: a search reads up to thousands of files and tests a model-supplied pattern against
 * every line, and a regular expression can backtrack for minutes. On the orchestrator's thread
 * that would block the event loop (every run, the HTTP API, heartbeats) and could not be stopped;
 * on its own thread it is killed (`terminate`) at the timeout or when the turn is cancelled, and
 * its heap is capped by the thread's `resourceLimits`.
 *
 * The thread loads this module alone: it imports Node's built-ins only (and types), so that the
 * compiled file, or its text transpiled in memory when run from the sources, needs nothing else.
 */

/** What the thread is given (as `workerData`): the files to search, already inside the workspace. */
export interface SearchRequest {
  files: Array<{ rel: string; abs: string }>;
  pattern: string;
  regex: boolean;
  maxMatches: number;
  maxFileBytes: number;
  maxLineChars: number;
}

/** What the thread posts back, once. */
export interface SearchResult {
  /** "file:line: text" lines. */
  matches: string[];
  /** Stopped at `maxMatches`. */
  truncated: boolean;
  /** Files over `maxFileBytes`, not searched. */
  skipped: number;
}

function search({ files, pattern, regex, maxMatches, maxFileBytes, maxLineChars }: SearchRequest): SearchResult {
  const re = regex ? new RegExp(pattern) : null;
  const matches: string[] = [];
  let truncated = false;
  let skipped = 0;
  outer: for (const file of files) {
    let text: string;
    try {
      // O_NOFOLLOW: a file swapped for a link since the walk is not followed; O_NONBLOCK: nor does a FIFO hang.
      const fd = openSync(file.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) continue;
        // A hard link may be another name of a file outside the workspace: not searched.
        if (st.nlink > 1) {
          skipped++;
          continue;
        }
        if (st.size > maxFileBytes) {
          skipped++;
          continue;
        }
        const buf = readFileSync(fd);
        if (buf.subarray(0, 8192).includes(0)) continue; // binary
        text = buf.toString('utf8');
      } finally {
        closeSync(fd);
      }
    } catch {
      continue; // gone or unreadable since the walk: not part of the answer
    }
    const lines = text.split(/\r?\n/);
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (re ? re.test(line) : line.includes(pattern)) {
        if (matches.length >= maxMatches) {
          truncated = true;
          break outer;
        }
        const shown = line.length > maxLineChars ? line.slice(0, maxLineChars) + '…' : line;
        matches.push(file.rel + ':' + (i + 1) + ': ' + shown);
      }
    }
  }
  return { matches, truncated, skipped };
}

if (!parentPort) throw new Error('search.worker runs on a worker thread started by search-files.ts; it is not imported');
parentPort.postMessage(search(workerData as SearchRequest));
