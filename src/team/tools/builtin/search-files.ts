import { promises as fs } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { ToolDefinition } from '../tool.port';
import { realWorkspaceOf, resolveInWorkspace, toWorkspacePath } from '../workspace';
import type { BuiltinToolLimits } from './limits';
import { fail, formatBytes, formatDuration, fsFailure, ok, quote } from './outcomes';
import type { SearchRequest, SearchResult } from './search.worker';
import { walk, type WalkEntry } from './walk';
import { workerScript } from './worker-script';

/**
 * search_files: text (or a regex) in the workspace's files. The walk runs here; the reading and
 * matching run on a worker thread (search.worker.ts says why) that is stopped at
 * `searchTimeoutMs` or when the turn is cancelled.
 */

const MAX_MATCH_LINE_CHARS = 300;

export function searchFilesTool(limits: BuiltinToolLimits): ToolDefinition {
  return {
    name: 'search_files',
    description:
      'Search the text files of the workspace (or of one directory or file in it) for a pattern; returns "file:line: text" ' +
      `lines, at most ${limits.searchMaxMatches}. The pattern is a literal string unless regex is true (JavaScript regular ` +
      'expression syntax, matched per line). Skips binary files, .git and node_modules.',
    inputSchema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', minLength: 1, maxLength: 1000, description: 'Text (or regex) to find.' },
        path: { type: 'string', description: 'Directory or file relative to the workspace (default ".").' },
        regex: { type: 'boolean', description: 'Treat pattern as a regular expression (default false).' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    readOnly: true,
    idempotent: true,
    risk: 'low',
    async execute(input, context) {
      const pattern = input.pattern as string;
      const regex = input.regex === true;
      const userPath = (input.path as string | undefined) || '.';
      if (regex) {
        try {
          new RegExp(pattern);
        } catch (err) {
          return fail(`invalid regular expression ${quote(pattern)}: ${(err as Error).message}`);
        }
      }
      try {
        const target = await resolveInWorkspace(context.workspace, userPath, { realRoot: context.realWorkspace });
        const realWorkspace = await realWorkspaceOf(context);
        const stat = await fs.stat(target);
        let files: WalkEntry[];
        let tooManyFiles = false;
        if (stat.isFile()) {
          files = [{ rel: toWorkspacePath(realWorkspace, target), kind: 'file', abs: target }];
        } else if (stat.isDirectory()) {
          const walked = await walk(realWorkspace, target, {
            recursive: true,
            max: limits.searchMaxFiles,
            include: (e) => e.kind === 'file',
            signal: context.signal,
          });
          files = walked.entries;
          tooManyFiles = walked.truncated;
        } else {
          return fail(`${quote(userPath)} is neither a file nor a directory`);
        }
        if (context.signal.aborted) return fail('search cancelled');
        const result = await runSearchWorker(
          {
            files: files.map(({ rel, abs }) => ({ rel, abs })),
            pattern,
            regex,
            maxMatches: limits.searchMaxMatches,
            maxFileBytes: limits.searchMaxFileBytes,
            maxLineChars: MAX_MATCH_LINE_CHARS,
          },
          limits.searchTimeoutMs,
          context.signal,
        );
        if (result === 'timeout') {
          return fail(`search stopped after ${formatDuration(limits.searchTimeoutMs)}; try a simpler pattern or a narrower path`);
        }
        if (result === 'aborted') return fail('search cancelled');
        const lines = result.matches.length > 0 ? [...result.matches] : [`no matches for ${quote(pattern)} in ${quote(userPath)}`];
        if (result.truncated) lines.push(`[stopped after ${limits.searchMaxMatches} matches; narrow the pattern or path]`);
        if (tooManyFiles) lines.push(`[only the first ${limits.searchMaxFiles} files were searched; narrow the path]`);
        if (result.skipped > 0) lines.push(`[${result.skipped} file(s) over ${formatBytes(limits.searchMaxFileBytes)} skipped]`);
        return ok(lines.join('\n'));
      } catch (err) {
        return fsFailure(err, userPath, 'search');
      }
    },
  };
}

/** Searches on a worker thread; resolves with its result, or says it was stopped. */
async function runSearchWorker(request: SearchRequest, timeoutMs: number, signal: AbortSignal): Promise<SearchResult | 'timeout' | 'aborted'> {
  const { script, eval: isSource } = await workerScript(__filename, 'search.worker');
  // Run from the sources, finding the worker's code may take a moment: the turn may be cancelled by then.
  if (signal.aborted) return 'aborted';
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, {
      eval: isSource,
      workerData: request,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      outcome();
      // The answer is settled; the worker's exit code is of no interest (terminate does not reject).
      void worker.terminate();
    };
    const timer = setTimeout(() => settle(() => resolve('timeout')), timeoutMs);
    const onAbort = (): void => settle(() => resolve('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (message: SearchResult) => settle(() => resolve(message)));
    worker.once('error', (err) => settle(() => reject(err)));
    worker.once('exit', (code) => settle(() => reject(new Error(`search worker exited early with code ${code}`))));
  });
}
