import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolUseBlock } from '../../../src/team/models/model.port';
import type { ToolContext, ToolDefinition } from '../../../src/team/tools/tool.port';
import {
  createDefaultToolRegistry,
  DEFAULT_ROLE_TOOLS,
  resolveRoleTools,
  SUBMIT_TOOL_BY_ROLE,
  SUBMIT_TOOL_SPECS,
  ToolPolicyError,
  ToolRegistry,
  validateSubmission,
} from '../../../src/team/tools/tool-registry';
import { contextFor, scratchDir } from './tool-test-support';
import { createBuiltinTools } from '../../../src/team/tools/builtin-tools';
import Ajv from 'ajv';

const READ_ONLY = ['read_file', 'list_files', 'search_files'];
const ALL = ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command', 'spawn_sub_agent'];

const call = (name: string, input: Record<string, unknown>): ToolUseBlock => ({ type: 'tool_use', id: 'toolu_1', name, input });

describe('role tool policy', () => {
  it('gives architect and reviewer the read-only tools and the executor all six', () => {
    expect(DEFAULT_ROLE_TOOLS).toEqual({ architect: READ_ONLY, executor: ALL, reviewer: READ_ONLY });
    expect(resolveRoleTools('reviewer')).toEqual(READ_ONLY);
    expect(resolveRoleTools('executor')).toEqual(ALL);
  });

  it('lets a team config narrow a role, in catalogue order, deduplicated', () => {
    expect(resolveRoleTools('executor', ['write_file', 'read_file', 'write_file'])).toEqual(['read_file', 'write_file']);
    expect(resolveRoleTools('reviewer', ['read_file'])).toEqual(['read_file']);
    expect(resolveRoleTools('architect', [])).toEqual([]);
    expect(resolveRoleTools('reviewer', ['submit_verdict', 'list_files'])).toEqual(['list_files']);
  });

  it.each([
    ['reviewer', 'write_file'],
    ['reviewer', 'run_command'],
    ['architect', 'edit_file'],
  ] as const)('refuses %s getting the write tool %s at configuration time', (role, tool) => {
    const attempt = (): unknown => resolveRoleTools(role, ['read_file', tool]);
    expect(attempt).toThrow(ToolPolicyError);
    expect(attempt).toThrow(`${tool} can change the workspace and cannot be given to the ${role}`);
    try {
      attempt();
    } catch (err) {
      expect(err).toMatchObject({ name: 'ToolPolicyError', role, tool });
    }
  });

  it('refuses unknown tools and other roles’ submit tools', () => {
    expect(() => resolveRoleTools('executor', ['rm_rf'])).toThrow(/unknown tool "rm_rf" in the executor's allow-list/);
    expect(() => resolveRoleTools('executor', ['submit_verdict'])).toThrow('submit_verdict belongs to the reviewer, not the executor');
  });

  it('refuses the same at specsFor time', () => {
    expect(() => createDefaultToolRegistry().specsFor('reviewer', ['write_file'])).toThrow(ToolPolicyError);
  });
});

describe('ToolRegistry.specsFor', () => {
  const registry = createDefaultToolRegistry();

  it('offers each role its tools followed by its submit tool', () => {
    expect(registry.specsFor('architect').map((s) => s.name)).toEqual([...READ_ONLY, 'submit_plan']);
    expect(registry.specsFor('executor').map((s) => s.name)).toEqual([...ALL, 'submit_work']);
    expect(registry.specsFor('reviewer').map((s) => s.name)).toEqual([...READ_ONLY, 'submit_verdict']);
    expect(registry.specsFor('executor', ['read_file']).map((s) => s.name)).toEqual(['read_file', 'submit_work']);
  });

  it('gives every spec a closed object schema with its required fields', () => {
    for (const spec of registry.specsFor('executor')) {
      expect(spec.description.length).toBeGreaterThan(10);
      expect(spec.input_schema).toMatchObject({ type: 'object', additionalProperties: false });
    }
    const bySpec = Object.fromEntries(registry.specsFor('executor').map((s) => [s.name, s.input_schema['required']]));
    expect(bySpec).toEqual({
      read_file: ['path'],
      list_files: undefined,
      search_files: ['pattern'],
      write_file: ['path', 'content'],
      edit_file: ['path', 'old', 'new'],
      run_command: ['command'],
      spawn_sub_agent: ['role', 'task'],
      submit_work: ['summary'],
    });
  });

  it('exposes tool traits for the agent loop', () => {
    const traits = Object.fromEntries(
      registry.names().map((name) => {
        const tool = registry.get(name)!;
        return [name, [tool.readOnly, tool.idempotent, tool.risk]];
      }),
    );
    expect(traits).toEqual({
      read_file: [true, true, 'low'],
      list_files: [true, true, 'low'],
      search_files: [true, true, 'low'],
      write_file: [false, true, 'low'],
      edit_file: [false, false, 'low'],
      // Rated per spawn by the driver: as risky as the tools its sub-agent gets.
      spawn_sub_agent: [false, false, 'low'],
      run_command: [false, false, 'high'],
    });
  });

  it('hands out one shared, frozen list per role and allow-list: nobody can change what the next call offers', () => {
    const spec = registry.specsFor('reviewer')[0]!;
    expect(() => {
      (spec.input_schema as Record<string, unknown>)['type'] = 'mutated';
    }).toThrow(TypeError);
    expect(registry.specsFor('reviewer')[0]!.input_schema['type']).toBe('object');
    expect(registry.specsFor('reviewer')).toBe(registry.specsFor('reviewer'));
    expect(registry.specsFor('executor', ['read_file'])).not.toBe(registry.specsFor('executor'));
    expect(registry.specsFor('executor', ['read_file']).map((t) => t.name)).toEqual(['read_file', 'submit_work']);
  });
});

describe('ToolRegistry.invoke', () => {
  let ws: ReturnType<typeof scratchDir>;
  let context: ToolContext;
  const registry = createDefaultToolRegistry();

  beforeEach(() => {
    ws = scratchDir('triad-registry-');
    writeFileSync(join(ws.path, 'notes.txt'), 'remember the milk\n');
    context = contextFor(ws.path, { role: 'reviewer' });
  });
  afterEach(() => ws.remove());

  it('runs an allowed tool with valid input', async () => {
    const outcome = await registry.invoke(call('read_file', { path: 'notes.txt' }), 'reviewer', DEFAULT_ROLE_TOOLS.reviewer, context);
    expect(outcome).toEqual({ isError: false, output: 'remember the milk\n' });
  });

  it('refuses a tool the role may not use, without running it', async () => {
    const outcome = await registry.invoke(
      call('write_file', { path: 'notes.txt', content: 'overwritten' }),
      'reviewer',
      DEFAULT_ROLE_TOOLS.reviewer,
      context,
    );
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toBe(
      'tool write_file is not available to the reviewer (available: read_file, list_files, search_files, submit_verdict)',
    );
    expect(readFileSync(join(ws.path, 'notes.txt'), 'utf8')).toBe('remember the milk\n');
  });

  it('refuses a tool outside the narrowed allow-list and an unknown tool', async () => {
    const narrowed = resolveRoleTools('executor', ['read_file']);
    const outcome = await registry.invoke(call('run_command', { command: 'touch x' }), 'executor', narrowed, context);
    expect(outcome).toMatchObject({ isError: true, output: expect.stringContaining('tool run_command is not available to the executor') });
    const unknown = await registry.invoke(call('teleport', {}), 'executor', narrowed, context);
    expect(unknown).toMatchObject({ isError: true, output: expect.stringContaining('tool teleport is not available to the executor') });
  });

  it('returns every validation problem as an error outcome', async () => {
    const input = { offset: 'ten', limit: 0, colour: 'blue' };
    const outcome = await registry.invoke(call('read_file', input), 'reviewer', DEFAULT_ROLE_TOOLS.reviewer, context);
    expect(outcome.isError).toBe(true);
    expect(outcome.output).toBe(
      'invalid input for read_file: missing required property path; unknown property colour; offset must be integer; limit must be >= 1',
    );
    expect(input).toEqual({ offset: 'ten', limit: 0, colour: 'blue' });
  });

  it('reports a submit tool call as handled by the loop', async () => {
    const outcome = await registry.invoke(call('submit_verdict', {}), 'reviewer', DEFAULT_ROLE_TOOLS.reviewer, context);
    expect(outcome).toMatchObject({ isError: true, output: expect.stringContaining('handled by the agent loop') });
  });

  it('does not run a tool once the turn is cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const outcome = await registry.invoke(
      call('read_file', { path: 'notes.txt' }),
      'reviewer',
      DEFAULT_ROLE_TOOLS.reviewer,
      contextFor(ws.path, { signal: controller.signal }),
    );
    expect(outcome.isError).toBe(true);
  });

  it('gives the tool a copy of the input, leaving the recorded call untouched', async () => {
    const mutating: ToolDefinition = {
      name: 'mutate',
      description: 'mutates its input',
      inputSchema: { type: 'object', properties: { list: { type: 'array', items: { type: 'string' } } }, additionalProperties: false },
      readOnly: true,
      idempotent: true,
      risk: 'low',
      async execute(input) {
        (input['list'] as string[]).push('added');
        return { isError: false, output: 'ok' };
      },
    };
    const custom = new ToolRegistry([mutating]);
    const block = call('mutate', { list: ['a'] });
    await expect(custom.invoke(block, 'reviewer', custom.resolveRoleTools('reviewer'), context)).resolves.toEqual({ isError: false, output: 'ok' });
    expect(block.input).toEqual({ list: ['a'] });
  });
});

describe('ToolRegistry.register', () => {
  const tool = (overrides: Partial<ToolDefinition>): ToolDefinition => ({
    name: 'custom',
    description: 'a custom tool',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    readOnly: false,
    idempotent: false,
    risk: 'low',
    execute: async () => ({ isError: false, output: '' }),
    ...overrides,
  });

  it('refuses duplicates, submit tool names and schemas that strict Ajv rejects', () => {
    const registry = new ToolRegistry([tool({})]);
    expect(() => registry.register(tool({}))).toThrow('already registered');
    expect(() => registry.register(tool({ name: 'submit_plan' }))).toThrow('submit tool');
    expect(() => registry.register(tool({ name: 'bad schema', inputSchema: { type: 'object' } }))).toThrow('invalid tool name');
    expect(() => registry.register(tool({ name: 'loose', inputSchema: { type: 'object', propertees: {} } }))).toThrow();
  });

  it('given a tool of its own whose schema breaks JSON Schema (required as a string), when registered, then it is refused, naming the tool', () => {
    const registry = new ToolRegistry();
    expect(() => registry.register(tool({ name: 'odd', inputSchema: { type: 'object', required: 'path' } }))).toThrow(/^tool odd has an invalid input schema: .*required must be array/);
    expect(registry.resolveRoleTools('executor')).toEqual([]);
  });

  it("given the built-in tools (at default and at narrowed limits) and the submit tools, then every input schema is valid against JSON Schema's meta-schema (registries trust them without checking as a process starts)", () => {
    const ajv = new Ajv({ strict: true });
    const schemas = [
      ...createBuiltinTools().map((t) => [t.name, t.inputSchema] as const),
      ...createBuiltinTools({ readFileMaxBytes: 1024, listMaxEntries: 5, searchMaxMatches: 3 }).map((t) => [`${t.name} (narrowed)`, t.inputSchema] as const),
      ...Object.values(SUBMIT_TOOL_SPECS).map((spec) => [spec.name, spec.input_schema] as const),
    ];
    const invalid = schemas.filter(([, schema]) => !ajv.validateSchema(schema)).map(([name]) => `${name}: ${ajv.errorsText(ajv.errors)}`);
    expect(invalid).toEqual([]);
    expect(schemas.length).toBeGreaterThanOrEqual(17);
  });

  it('applies the read-only policy to registered tools too', () => {
    const registry = new ToolRegistry([tool({ name: 'deploy' }), tool({ name: 'peek', readOnly: true })]);
    expect(registry.resolveRoleTools('reviewer')).toEqual(['peek']);
    expect(registry.resolveRoleTools('executor')).toEqual(['deploy', 'peek']);
    expect(() => registry.resolveRoleTools('architect', ['deploy'])).toThrow(ToolPolicyError);
  });
});

describe('submit tools', () => {
  it('map each role to its submit tool', () => {
    expect(SUBMIT_TOOL_BY_ROLE).toEqual({ architect: 'submit_plan', executor: 'submit_work', reviewer: 'submit_verdict' });
    expect(SUBMIT_TOOL_SPECS.reviewer.input_schema).toMatchObject({ required: ['verdict', 'findings', 'summary'], additionalProperties: false });
  });

  it('accept well-formed submissions and return copies', () => {
    const input = { verdict: 'REQUEST_CHANGES', findings: ['tests fail'], summary: 'one criterion unmet' };
    const result = validateSubmission('reviewer', input);
    expect(result).toEqual({ ok: true, submission: input });
    if (result.ok) {
      result.submission.findings.push('changed');
      expect(input.findings).toEqual(['tests fail']);
    }
    expect(validateSubmission('architect', { plan: '1. do it', steps: ['do it'] })).toEqual({
      ok: true,
      submission: { plan: '1. do it', steps: ['do it'] },
    });
    expect(validateSubmission('executor', { summary: 'done', files: ['a.ts'] })).toMatchObject({ ok: true });
    expect(validateSubmission('reviewer', { verdict: 'APPROVE', findings: [], summary: 'all met' })).toMatchObject({ ok: true });
  });

  it.each([
    ['architect', { plan: '' }, 'invalid input for submit_plan: plan must NOT have fewer than 1 characters'],
    ['architect', { plan: '   ' }, 'invalid input for submit_plan: plan must not be blank'],
    ['architect', {}, 'invalid input for submit_plan: missing required property plan'],
    ['executor', { summary: 'done', files: 'a.ts' }, 'invalid input for submit_work: files must be array'],
    [
      'reviewer',
      { verdict: 'LGTM', findings: [], summary: 'ok', extra: 1 },
      'invalid input for submit_verdict: unknown property extra; verdict must be one of "APPROVE", "REQUEST_CHANGES", "BLOCK"',
    ],
    ['reviewer', { verdict: 'REQUEST_CHANGES', findings: [], summary: 'fix it' }, 'REQUEST_CHANGES needs at least one finding'],
    ['reviewer', null, 'invalid input for submit_verdict: input must be object'],
  ] as const)('reject %s input %j', (role, input, message) => {
    const result = validateSubmission(role, input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(message);
  });
});
