/** How much each built-in tool reads, lists, searches and keeps; `createBuiltinTools` takes overrides. */
export interface BuiltinToolLimits {
  /** read_file returns at most this many bytes per call. */
  readFileMaxBytes: number;
  /** list_files lists at most this many entries. */
  listMaxEntries: number;
  /** search_files reports at most this many matching lines. */
  searchMaxMatches: number;
  /** search_files looks at most at this many files. */
  searchMaxFiles: number;
  /** search_files skips files larger than this. */
  searchMaxFileBytes: number;
  /** A search (a model-supplied regex may backtrack badly) is stopped after this long. */
  searchTimeoutMs: number;
  /** run_command keeps at most this many bytes of output (half from the start, half from the end). */
  commandOutputMaxBytes: number;
  commandDefaultTimeoutMs: number;
  commandMaxTimeoutMs: number;
}

export const DEFAULT_TOOL_LIMITS: Readonly<BuiltinToolLimits> = Object.freeze({
  readFileMaxBytes: 256 * 1024,
  listMaxEntries: 1000,
  searchMaxMatches: 200,
  searchMaxFiles: 5000,
  searchMaxFileBytes: 2 * 1024 * 1024,
  searchTimeoutMs: 10_000,
  commandOutputMaxBytes: 64 * 1024,
  commandDefaultTimeoutMs: 30_000,
  commandMaxTimeoutMs: 10 * 60_000,
});
