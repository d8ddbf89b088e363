// One file over 400 lines on purpose: the role allow-lists, the submit tools' schemas and the
// dispatch that validates against them are one policy; split, a role's rights would be read in
// three places.
import type { Redactor } from '../../observability/log-format';
import { InvalidRequestError } from '../../shared/errors';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { AssistantBlock, RoleName, ToolSpec, ToolUseBlock } from '../models/model.port';
import { createBuiltinTools, isBuiltinSchema } from './builtin-tools';
import type { Sandbox } from './sandbox/sandbox';
import type { ToolContext, ToolDefinition, ToolOutcome } from './tool.port';
import { encodeMachineText, fromMachineText } from '../../shared/text';
import { isMcpToolName, mcpServerPrefixOf } from './mcp/mcp-names';
import { deepFreeze } from '../../shared/deep-freeze';

/**
 * Which tools each role may use, input validation, and dispatch. Architect and reviewer only ever
 * get read-only tools; each role ends its turn with its own submit tool, whose input is the role's
 * structured result (a verdict is a tool call, never parsed from prose).
 */

export class ToolPolicyError extends InvalidRequestError {
  override readonly name = 'ToolPolicyError';

  constructor(
    readonly role: RoleName,
    readonly tool: string,
    message: string,
  ) {
    super(message);
  }
}

const ROLES: readonly RoleName[] = ['architect', 'executor', 'reviewer'];
/** Roles that inspect the workspace but must not change it. */
const READ_ONLY_ROLES: ReadonlySet<RoleName> = new Set<RoleName>(['architect', 'reviewer']);

// ---------------------------------------------------------------------------------------------
// Submit tools

export const SUBMIT_TOOL_BY_ROLE = {
  architect: 'submit_plan',
  executor: 'submit_work',
  reviewer: 'submit_verdict',
} as const satisfies Record<RoleName, string>;

export type SubmitToolName = (typeof SUBMIT_TOOL_BY_ROLE)[RoleName];

export const VERDICTS = ['APPROVE', 'REQUEST_CHANGES', 'BLOCK'] as const;
export type Verdict = (typeof VERDICTS)[number];

// Type aliases rather than interfaces: they stay assignable to Record<string, unknown> for event data.
export type PlanSubmission = {
  plan: string;
  steps?: string[];
};

export type WorkSubmission = {
  summary: string;
  files?: string[];
};

export type VerdictSubmission = {
  verdict: Verdict;
  findings: string[];
  summary: string;
};

export interface SubmissionByRole {
  architect: PlanSubmission;
  executor: WorkSubmission;
  reviewer: VerdictSubmission;
}

export type SubmissionResult<R extends RoleName> =
  | { ok: true; submission: SubmissionByRole[R] }
  | { ok: false; error: string };

const NON_EMPTY_TEXT = { type: 'string', minLength: 1, pattern: '\\S' } as const;

export const SUBMIT_TOOL_SPECS: Readonly<Record<RoleName, ToolSpec>> = Object.freeze({
  architect: {
    name: SUBMIT_TOOL_BY_ROLE.architect,
    description:
      'Submit your plan for the executor. Call it once, when the plan is complete; it ends your turn. plan is the full plan ' +
      'as text; steps optionally lists its numbered steps one per entry.',
    input_schema: {
      type: 'object',
      properties: {
        plan: { ...NON_EMPTY_TEXT, description: 'The complete plan.' },
        steps: { type: 'array', items: NON_EMPTY_TEXT, description: 'The plan as separate steps, in order.' },
      },
      required: ['plan'],
      additionalProperties: false,
    },
  },
  executor: {
    name: SUBMIT_TOOL_BY_ROLE.executor,
    description:
      'Submit your finished work for review. Call it once, when the work is done; it ends your turn. summary says what you ' +
      'did and how each finding was addressed; files lists the workspace paths you created or changed.',
    input_schema: {
      type: 'object',
      properties: {
        summary: { ...NON_EMPTY_TEXT, description: 'What was done.' },
        files: { type: 'array', items: NON_EMPTY_TEXT, description: 'Workspace paths created or changed.' },
      },
      required: ['summary'],
      additionalProperties: false,
    },
  },
  reviewer: {
    name: SUBMIT_TOOL_BY_ROLE.reviewer,
    description:
      'Submit your verdict; it ends your turn. APPROVE when every acceptance criterion is met; REQUEST_CHANGES with at least ' +
      'one finding (one per unmet criterion) for the executor to address; BLOCK when the goal cannot be reached. ' +
      'summary explains the verdict.',
    input_schema: {
      type: 'object',
      properties: {
        verdict: { type: 'string', enum: [...VERDICTS], description: 'APPROVE, REQUEST_CHANGES or BLOCK.' },
        findings: { type: 'array', items: NON_EMPTY_TEXT, description: 'One entry per problem found.' },
        summary: { ...NON_EMPTY_TEXT, description: 'Why this verdict.' },
      },
      required: ['verdict', 'findings', 'summary'],
      additionalProperties: false,
    },
  },
});

/**
 * A compiler of validators for triad's own schemas (the built-in tools', the submit tools'). No
 * coercion, no defaults, no removal: validation never rewrites the model's input. Strict mode
 * refuses unknown keywords and formats at compile time. The schemas are not checked against JSON
 * Schema's meta-schema as each process starts (compiling the meta-schema was a sixth of a server's
 * start-up CPU, and it was compiled twice): they are constants, and a test checks each of them
 * against it. A registry checks any other tool's schema against it (register); tools from
 * elsewhere (MCP) go through compileLenient.
 */
function ownSchemasAjv(): Ajv {
  return new Ajv({ strict: true, allErrors: true, validateSchema: false });
}

let submitValidators: Record<RoleName, ValidateFunction> | undefined;

function submitValidator(role: RoleName): ValidateFunction {
  // Compiled once on first use.
  if (!submitValidators) {
    const ajv = ownSchemasAjv();
    submitValidators = {
      architect: ajv.compile(SUBMIT_TOOL_SPECS.architect.input_schema),
      executor: ajv.compile(SUBMIT_TOOL_SPECS.executor.input_schema),
      reviewer: ajv.compile(SUBMIT_TOOL_SPECS.reviewer.input_schema),
    };
  }
  return submitValidators[role];
}

/** Checks a submit tool call's input; returns a copy typed for the role, or what is wrong with it. */
export function validateSubmission<R extends RoleName>(role: R, input: unknown): SubmissionResult<R> {
  const validate = submitValidator(role);
  const name = SUBMIT_TOOL_BY_ROLE[role];
  if (!validate(input)) return { ok: false, error: `invalid input for ${name}: ${describeErrors(validate.errors ?? [])}` };
  const copy = structuredClone(input) as SubmissionByRole[R];
  if (role === 'reviewer') {
    const verdict = copy as VerdictSubmission;
    if (verdict.verdict === 'REQUEST_CHANGES' && verdict.findings.length === 0) {
      return { ok: false, error: `invalid input for ${name}: REQUEST_CHANGES needs at least one finding for the executor` };
    }
  }
  return { ok: true, submission: copy };
}

// ---------------------------------------------------------------------------------------------
// Role policy

interface ToolCatalogueEntry {
  name: string;
  readOnly: boolean;
}

/** An allow-list entry with `*` (any run of characters): `mcp__fs__*`, `mcp__*`, `read_*`. */
function patternOf(entry: string): RegExp | undefined {
  if (!entry.includes('*')) return undefined;
  return new RegExp(`^${entry.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

function resolveFromCatalogue(
  catalogue: readonly ToolCatalogueEntry[],
  role: RoleName,
  allowList?: readonly string[],
  mcpPrefixes: ReadonlySet<string> = new Set(),
): string[] {
  if (!ROLES.includes(role)) throw new TypeError(`unknown role ${JSON.stringify(role)}`);
  const readOnlyRole = READ_ONLY_ROLES.has(role);
  const permitted = catalogue.filter((tool) => !readOnlyRole || tool.readOnly).map((tool) => tool.name);
  if (allowList === undefined) return permitted;

  const requested = new Set<string>();
  /** Named tools of configured MCP servers whose tools are not known yet (the server is not reachable). */
  const pending = new Set<string>();
  for (const name of allowList) {
    if (name === SUBMIT_TOOL_BY_ROLE[role]) continue; // always given; naming it is harmless
    const owner = ROLES.find((r) => SUBMIT_TOOL_BY_ROLE[r] === name);
    if (owner) throw new ToolPolicyError(role, name, `${name} belongs to the ${owner}, not the ${role}`);
    const pattern = patternOf(name);
    if (pattern) {
      // A pattern takes what it matches and the role may have; matching nothing is an error
      // unless it names a configured MCP server (whose tools may not be known yet).
      const matches = catalogue.filter((t) => pattern.test(t.name));
      const prefix = mcpServerPrefixOf(name);
      if (matches.length === 0 && !(prefix !== undefined && mcpPrefixes.has(prefix))) {
        throw new ToolPolicyError(role, name, `${JSON.stringify(name)} in the ${role}'s allow-list matches no tool (known tools: ${catalogue.map((t) => t.name).join(', ')})`);
      }
      for (const t of matches) if (!readOnlyRole || t.readOnly) requested.add(t.name);
      continue;
    }
    const tool = catalogue.find((t) => t.name === name);
    if (!tool) {
      const prefix = mcpServerPrefixOf(name);
      if (prefix !== undefined && mcpPrefixes.has(prefix) && !catalogue.some((t) => mcpServerPrefixOf(t.name) === prefix)) {
        pending.add(name);
        continue;
      }
      throw new ToolPolicyError(
        role,
        name,
        `unknown tool ${JSON.stringify(name)} in the ${role}'s allow-list (known tools: ${catalogue.map((t) => t.name).join(', ')})`,
      );
    }
    if (readOnlyRole && !tool.readOnly) {
      throw new ToolPolicyError(
        role,
        name,
        `${name} can change the workspace and cannot be given to the ${role}, which only gets read-only tools (${permitted.join(', ')})`,
      );
    }
    requested.add(name);
  }
  // Catalogue order, so the model sees the same tool order whatever order the config used.
  return [...permitted.filter((name) => requested.has(name)), ...[...pending].sort()];
}

/**
 * The tools a role gets with the built-in tools, narrowed by a team config's allow-list. Throws
 * `ToolPolicyError` for an unknown tool, another role's submit tool, or a tool that can change the
 * workspace on a read-only role. Launch validation calls this; the submit tool is not included.
 */
export function resolveRoleTools(role: RoleName, allowList?: readonly string[]): string[] {
  return resolveFromCatalogue(createBuiltinTools(), role, allowList);
}

/** The built-in tools each role gets when the team config does not narrow them. */
export const DEFAULT_ROLE_TOOLS: Readonly<Record<RoleName, readonly string[]>> = Object.freeze({
  architect: Object.freeze(resolveRoleTools('architect')),
  executor: Object.freeze(resolveRoleTools('executor')),
  reviewer: Object.freeze(resolveRoleTools('reviewer')),
});

// ---------------------------------------------------------------------------------------------
// Registry

/**
 * Tools found at run time (an MCP hub): `discover` answers every tool known so far and never
 * throws; `close` ends what it opened.
 */
export interface ToolSource {
  /** Tool-name prefixes the source serves (`fs` for `mcp__fs__*`), known before its tools are. */
  readonly prefixes: readonly string[];
  discover(): Promise<ToolDefinition[]>;
  close(): Promise<void>;
}

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv = ownSchemasAjv();
  private lenientAjv?: Ajv;
  private readonly specCache = new Map<string, readonly ToolSpec[]>();
  private readonly sources: ToolSource[] = [];
  private readonly mcpPrefixes = new Set<string>();

  /**
   * The process's secrets (its API keys, the Anthropic key, store passwords): replaced with
   * `[redacted]` in every tool output and every file a tool leaves, before either is recorded. A
   * command can read them where its process can (its parent's environment, for one).
   */
  secrets?: Redactor;

  /** The OS sandbox its tools' processes run in: what a launch records of it (RunLaunched.sandbox). */
  sandbox?: Sandbox;

  constructor(tools: Iterable<ToolDefinition> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool; its input schema is compiled now, so a bad schema fails at startup. */
  register(tool: ToolDefinition): this {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) throw new Error(`invalid tool name ${JSON.stringify(tool.name)}`);
    if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is already registered`);
    if (ROLES.some((role) => SUBMIT_TOOL_BY_ROLE[role] === tool.name)) {
      throw new Error(`${tool.name} is a submit tool, handled by the agent loop; it cannot be registered`);
    }
    this.validators.set(tool.name, tool.lenientSchema ? this.compileLenient(tool.inputSchema) : this.compileStrict(tool));
    this.tools.set(tool.name, tool);
    this.specCache.clear();
    return this;
  }

  /** Adds a source of tools found at run time; `ready` registers what it finds. */
  addSource(source: ToolSource): this {
    this.sources.push(source);
    for (const prefix of source.prefixes) this.mcpPrefixes.add(prefix);
    return this;
  }

  /**
   * Registers the tools the sources know (connecting what is not connected yet). Called before a
   * launch resolves its allow-lists and before a run is driven; never throws.
   */
  async ready(): Promise<void> {
    for (const source of this.sources) {
      for (const tool of await source.discover()) if (!this.tools.has(tool.name)) this.register(tool);
    }
  }

  /** Closes the sources (their connections and processes). */
  async close(): Promise<void> {
    // At shutdown, after the runs stopped: one source that cannot close must not keep the others from closing, and nothing uses it any more.
    await Promise.all(this.sources.map((s) => s.close().catch(() => undefined)));
  }

  /** A schema that is not one of the built-in tools' is checked against JSON Schema's meta-schema first. */
  private compileStrict(tool: ToolDefinition): ValidateFunction {
    if (!isBuiltinSchema(tool.inputSchema) && !this.ajv.validateSchema(tool.inputSchema)) {
      throw new Error(`tool ${tool.name} has an invalid input schema: ${this.ajv.errorsText(this.ajv.errors)}`);
    }
    return this.ajv.compile(tool.inputSchema);
  }

  /** Tools from elsewhere may use any JSON-schema dialect: checked as far as it can be compiled. */
  private compileLenient(schema: Record<string, unknown>): ValidateFunction {
    this.lenientAjv ??= new Ajv({ strict: false, allErrors: true, validateFormats: false });
    const { $schema: _dialect, ...rest } = schema;
    try {
      return this.lenientAjv.compile(rest);
    } catch {
      return this.lenientAjv.compile({ type: 'object' });
    }
  }

  /** Registered tools in the order roles get them: the built-in ones as registered, then MCP tools by name. */
  private catalogue(): ToolDefinition[] {
    const all = [...this.tools.values()];
    const mcp = all.filter((t) => isMcpToolName(t.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...all.filter((t) => !isMcpToolName(t.name)), ...mcp];
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return this.catalogue().map((t) => t.name);
  }

  /**
   * Like the module-level `resolveRoleTools`, over this registry's tools; allow-list entries may
   * be patterns with `*` (`mcp__fs__*`), and may name tools of a configured MCP server not reached yet.
   */
  resolveRoleTools(role: RoleName, allowList?: readonly string[]): string[] {
    return resolveFromCatalogue(this.catalogue(), role, allowList, this.mcpPrefixes);
  }

  /**
   * The tools offered to the model for a role: its allowed tools, then its submit tool. Built once
   * per role and allow-list (every model call asks), and deeply frozen, since all callers share it.
   */
  specsFor(role: RoleName, allowList?: readonly string[]): readonly ToolSpec[] {
    const key = `${role}\u0000${allowList === undefined ? '*' : allowList.join('\u0000')}`;
    let specs = this.specCache.get(key);
    if (!specs) {
      // A run's recorded list may name MCP tools this process does not have (their server is not
      // configured or not reached): they are not offered, and a call to one is refused.
      const known = allowList?.filter((name) => this.tools.has(name) || !isMcpToolName(name));
      const list: ToolSpec[] = this.resolveRoleTools(role, known).map((name) => {
        const tool = this.tools.get(name)!;
        const spec: ToolSpec = { name: tool.name, description: tool.description, input_schema: structuredClone(tool.inputSchema) };
        if (tool.annotations) spec.annotations = { ...tool.annotations };
        return spec;
      });
      const submit = SUBMIT_TOOL_SPECS[role];
      list.push({ ...submit, input_schema: structuredClone(submit.input_schema) });
      specs = deepFreeze(list);
      this.specCache.set(key, specs);
    }
    return specs;
  }

  /** A readable list of what is wrong with an input, or undefined when it is valid. */
  validate(name: string, input: unknown): string | undefined {
    const validate = this.validators.get(name);
    if (!validate) return `unknown tool ${name}`;
    return validate(input) ? undefined : describeErrors(validate.errors ?? []);
  }

  /**
   * Runs one tool call for a role. `allowed` is the role's resolved tool list (from
   * `resolveRoleTools`). Calls the role may not make and invalid input come back as error outcomes
   * for the model; a tool that throws has a bug, and the error propagates.
   */
  async invoke(call: ToolUseBlock, role: RoleName, allowed: readonly string[], context: ToolContext): Promise<ToolOutcome> {
    if (call.name === SUBMIT_TOOL_BY_ROLE[role]) {
      return { isError: true, output: `${call.name} ends the turn and is handled by the agent loop, not run as a tool` };
    }
    const tool = this.tools.get(call.name);
    const available = allowed.filter((name) => this.tools.has(name));
    if (!tool || !available.includes(call.name)) {
      const offer = [...available, SUBMIT_TOOL_BY_ROLE[role]].join(', ');
      return { isError: true, output: `tool ${call.name} is not available to the ${role} (available: ${offer})` };
    }
    const problems = this.validate(call.name, call.input);
    if (problems !== undefined) return { isError: true, output: `invalid input for ${call.name}: ${problems}` };
    if (context.signal.aborted) return { isError: true, output: `${call.name} was not run: the turn was cancelled` };
    // The tool gets its own copy of the input, decoded from machine text (the recorded tool_use
    // block stays as it is), and its output enters the domain as machine text: this is where tool
    // text crosses into the events (see "Text in events" in docs/EVENTS.md).
    const outcome = await tool.execute(fromMachineText(call.input), context);
    const output = outcome.machineText ? outcome.output : encodeMachineText(outcome.output);
    return { output: this.secrets ? this.secrets.redactKnown(output) : output, isError: outcome.isError };
  }
}

/**
 * A model's answer with the process's secrets (in all their forms) taken out of its text and its
 * tool calls' input, before it is recorded or acted on: a model that was shown a secret does not
 * write it into the record, a file or a command. Thinking blocks are kept as they are (the
 * provider checks their signature when they are sent back).
 */
export function redactAnswer<T extends { content: AssistantBlock[] }>(response: T, secrets: Redactor | undefined): T {
  if (!secrets || secrets.empty) return response;
  let changed = false;
  const content = response.content.map((block) => {
    if (block.type === 'text') {
      const text = secrets.redactKnown(block.text);
      if (text === block.text) return block;
      changed = true;
      return { ...block, text };
    }
    if (block.type === 'tool_use') {
      const input = secrets.redactDeep(block.input);
      if (JSON.stringify(input) === JSON.stringify(block.input)) return block;
      changed = true;
      return { ...block, input };
    }
    return block;
  });
  return changed ? { ...response, content } : response;
}

export function createDefaultToolRegistry(sandbox?: Sandbox): ToolRegistry {
  const registry = new ToolRegistry(createBuiltinTools({}, sandbox));
  if (sandbox) registry.sandbox = sandbox;
  return registry;
}

// ---------------------------------------------------------------------------------------------

function describeErrors(errors: readonly ErrorObject[]): string {
  const messages = errors.map((error) => {
    const at = error.instancePath === '' ? '' : error.instancePath.slice(1).replace(/\//g, '.');
    const subject = at === '' ? 'input' : at;
    switch (error.keyword) {
      case 'required':
        return `missing required property ${at === '' ? '' : `${at}.`}${String(error.params.missingProperty)}`;
      case 'additionalProperties':
        return `unknown property ${at === '' ? '' : `${at}.`}${String(error.params.additionalProperty)}`;
      case 'enum':
        return `${subject} must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
      case 'pattern':
        if (error.params.pattern === NON_EMPTY_TEXT.pattern) return `${subject} must not be blank`;
        return `${subject} ${error.message ?? 'is invalid'}`;
      default:
        return `${subject} ${error.message ?? 'is invalid'}`;
    }
  });
  return [...new Set(messages)].join('; ');
}
