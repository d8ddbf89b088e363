import type { RoleName } from '../models/model.port';

export interface ToolContext {
  runId: string;
  role: RoleName;
  /** Absolute path of the run's workspace; every path a tool touches must resolve inside it. */
  workspace: string;
  /**
   * The workspace's real path, resolved once for the run by its driver: paths are confined to that
   * directory, and it is not resolved again on every call. Absent: each call resolves `workspace`.
   */
  realWorkspace?: string;
  signal: AbortSignal;
  /**
   * The hosts a command of this role may reach through the sandbox's network proxy (the run's
   * `team.<role>.network`, or the deployment's default, as RunLaunched recorded it). Absent or
   * empty: no network at all.
   */
  network?: readonly string[];
  /**
   * The sandbox the run was launched with: a run launched sandboxed never has its commands run
   * unsandboxed by a process with TRIAD_SANDBOX=off.
   */
  sandboxMode?: 'bubblewrap' | 'off';
}

export interface ToolOutcome {
  output: string;
  isError: boolean;
  /**
   * The output is machine text already (built with `encodeMachineBytes`/`encodeMachineText` of
   * src/shared/text.ts, e.g. from a file's bytes). Otherwise the registry converts it.
   */
  machineText?: boolean;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON schema of the input; validated before `execute` is called. */
  inputSchema: Record<string, unknown>;
  /** Reads only: safe to run concurrently with other read-only tools. */
  readOnly: boolean;
  /** Running it twice has the effect of running it once: crash recovery may re-run it. */
  idempotent: boolean;
  /** `high` tools may need a human approval before they run. */
  risk: 'low' | 'high';
  /**
   * The input schema comes from elsewhere (an MCP server): compiled leniently (unknown keywords and
   * formats allowed), and not checked at all if it cannot be compiled; the tool checks its input.
   */
  lenientSchema?: boolean;
  /** What the tool's server declared about it (MCP tools), shown to the model with the tool. */
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean };
  execute(input: Record<string, unknown>, context: ToolContext): Promise<ToolOutcome>;
}
