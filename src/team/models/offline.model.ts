// One file over 400 lines on purpose: the offline model is one script per role replayed against
// the conversation, and the scripts share the criteria parser and the replay rule; split, a role's
// play (and why a resumed run answers byte for byte the same) would be read across files.
import { pause } from '../../shared/pause';
import { sha256Hex } from '../../shared/canonical-json';
import { parseTaskMessage, type TaskMessageInput } from '../domain/prompts';
import {
  ModelError,
  type AssistantBlock,
  type ChatMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type RoleName,
  type ToolSpec,
} from './model.port';
import { NextCall, Replay, stableJson, takenSteps, UnexpectedState, type ToolObservation } from './offline.script-replay';
import { toMachineText } from '../../shared/text';
import { offlineDecompositionTurn, SUBMIT_TASK_GRAPH } from '../../projects/decomposition';
import { SPAWN_SUB_AGENT_TOOL } from '../domain/sub-agents';
import { SUB_AGENT_ROLES, type SubAgentRole } from '../domain/run-events';
import { COMPLETE_STEP, FAIL_STEP, MAX_STEP_TEXT, SUBMIT_STEPS } from '../domain/loop-strategy';

/**
 * The built-in offline model: plays the three roles with real tool calls, without a network.
 *
 * It is stateless on purpose — every answer is a pure function of the request — because runs are
 * resumed after crashes and replayed. Each role is a short script that is *replayed* against the
 * tool_use / tool_result history of the conversation: steps already taken must match what the
 * script would do (their results feed its decisions), and the first step not yet taken is the
 * answer. One tool call per turn.
 *
 * Acceptance criteria it understands (case-insensitive keywords):
 * - `file <path> exists`
 * - `file <path> contains "<text>"` (or `'<text>'`, or unquoted text to the end of the line)
 * - anything else: a free-text criterion, met by a line of NOTES.md that mentions it.
 *
 * When MCP tools are offered, the executor calls one read-only MCP tool once in its first
 * iteration (`mcpProbe`); without them its script is unchanged.
 *
 * In a plan-first phase (loop strategies plan_execute and hybrid: the task message asks for a plan
 * "in <min> to <max> steps") every role plans with `submit_steps` — one step per acceptance
 * criterion, criteria grouped when there are more than <max>, steps that look over the workspace
 * added up to <min> — then works each step with real tool calls (read_file of the paths it names,
 * and for the executor write_file where a criterion is unmet; list_files for an added step) and
 * `complete_step`, and closes with its submit tool. A criterion containing "fail the first step"
 * makes it call `fail_step` on the first step once per phase, then submit the same plan again
 * (a replan). A criterion asking for delegation is handed to a sub-agent within its step, as in the
 * plain loop; the MCP probe is not part of this script.
 */

export const OFFLINE_MODEL_ID = 'triad-offline-1';
export const NOTES_FILE = 'NOTES.md';
/** The executor fixes at most this many unmet criteria per iteration, so review loops show. */
export const OFFLINE_CRITERIA_PER_ITERATION = 2;

export type OfflineCriterion = (
  | { kind: 'exists'; text: string; path: string }
  | { kind: 'contains'; text: string; path: string; needle: string }
  | { kind: 'note'; text: string; path: string }
) & {
  /** `delegate[ to a <role>]: <criterion>` or `sub-agent[ <role>]: <criterion>`: the executor hands it to a sub-agent. */
  delegate?: SubAgentRole;
};

const DELEGATE = new RegExp(`^\\s*(?:delegate(?:\\s+to)?|sub-?agent)(?:\\s+(?:an?\\s+)?(${SUB_AGENT_ROLES.join('|')}))?(?:\\s+sub-?agent)?\\s*:\\s*(.+)$`, 'is');

const PATH_TOKEN = '(`[^`]+`|"[^"]+"|\'[^\']+\'|\\S+)';
const EXISTS = new RegExp(`^\\s*file\\s+${PATH_TOKEN}\\s+exists\\s*\\.?\\s*$`, 'i');
const CONTAINS = new RegExp(`^\\s*file\\s+${PATH_TOKEN}\\s+contains\\s+(.+?)\\s*$`, 'i');

/** Reads one acceptance criterion in the grammar above. */
export function parseCriterion(text: string): OfflineCriterion {
  const delegated = DELEGATE.exec(text);
  if (delegated) {
    const inner = parseCriterion(delegated[2]);
    // The whole text names the criterion (findings quote it); the rest of it says what to do.
    return { ...inner, text, delegate: (delegated[1]?.toLowerCase() as SubAgentRole | undefined) ?? 'coder' };
  }
  const exists = EXISTS.exec(text);
  if (exists) return { kind: 'exists', text, path: normalisePath(unquote(exists[1])) };
  const contains = CONTAINS.exec(text);
  if (contains) return { kind: 'contains', text, path: normalisePath(unquote(contains[1])), needle: unquote(contains[2]) };
  return { kind: 'note', text, path: NOTES_FILE };
}

function unquote(token: string): string {
  const t = token.trim();
  if (t.length >= 2 && (t[0] === '"' || t[0] === "'" || t[0] === '`') && t[t.length - 1] === t[0]) return t.slice(1, -1);
  return t;
}

function normalisePath(path: string): string {
  return path.replace(/^\.\/+/, '');
}

export class OfflineModelProvider implements ModelProvider {
  readonly name = 'offline';
  private readonly latencyMs: number;

  /** `latencyMs`: each call waits this long first (`TRIAD_OFFLINE_LATENCY_MS`), as a remote model would. */
  constructor(options: { latencyMs?: number } = {}) {
    this.latencyMs = options.latencyMs ?? 0;
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    if (request.signal?.aborted) throw new ModelError('aborted', 'model request aborted');
    if (this.latencyMs > 0) {
      await pause(this.latencyMs, request.signal);
      if (request.signal?.aborted) throw new ModelError('aborted', 'model request aborted');
    }
    // A project's architect decomposing a goal is offered submit_task_graph (src/projects/decomposition.ts).
    const content: AssistantBlock[] =
      request.purpose === 'summary'
        ? [{ type: 'text', text: offlineSummary(request) }]
        : request.tools.some((t) => t.name === SUBMIT_TASK_GRAPH)
          ? offlineDecompositionTurn(request)
          : respond(request);
    for (const block of content) {
      if (block.type !== 'text') continue;
      try {
        request.onTextDelta?.(block.text);
      } catch {
        // Live streaming is best effort: a failing listener must not fail the model turn.
      }
    }
    const inputChars = request.system.length + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
    return toMachineText({
      model: OFFLINE_MODEL_ID,
      content,
      stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
      usage: { inputTokens: Math.ceil(inputChars / 4), outputTokens: Math.ceil(JSON.stringify(content).length / 4) },
    });
  }
}

/**
 * A deterministic summary for context compaction (the offline model writes no prose): how many
 * messages were archived and which tool calls they held, in order of first use.
 */
function offlineSummary(request: ModelRequest): string {
  const text = request.messages.map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n'))).join('\n');
  const messages = (text.match(/^#\d+ (user|assistant):/gm) ?? []).length;
  const calls = new Map<string, number>();
  for (const m of text.matchAll(/called ([A-Za-z0-9_-]+)\(/g)) calls.set(m[1], (calls.get(m[1]) ?? 0) + 1);
  const tools = [...calls.entries()].map(([name, n]) => `${name} ×${n}`).join(', ');
  return `Offline model summary: ${messages} earlier message(s) archived${tools ? `; tool calls: ${tools}` : '; no tool calls'}.`;
}

// ---------------------------------------------------------------------------------------------
// Answering: the role's script replayed against the conversation (offline.script-replay.ts)

function respond(request: ModelRequest): AssistantBlock[] {
  if (request.subAgent) return respondAsSubAgent(request, request.subAgent);
  // A role's conversation continues across phases and iterations: each phase opens with a user
  // message carrying the task (it starts with the goal). Only what follows the latest one counts.
  let taskIndex = -1;
  for (let i = request.messages.length - 1; i >= 0 && taskIndex < 0; i--) {
    const m = request.messages[i];
    if (m.role === 'user' && /(^|\n)Goal:\n/.test(textOf(m))) taskIndex = i;
  }
  const taskText = taskIndex >= 0 ? textOf(request.messages[taskIndex]) : '';
  const role = request.role as string;
  if (!taskText) return [say(`I cannot work on this conversation: it does not start with a task message.`)];
  if (role !== 'architect' && role !== 'executor' && role !== 'reviewer') {
    return [say(`I only play the architect, executor and reviewer roles, not '${role}'.`)];
  }
  const history = takenSteps(request.messages.slice(taskIndex + 1));
  if (typeof history === 'string') return [say(`The conversation is in a state I cannot continue from: ${history}.`)];

  const task = parseTaskMessage(taskText);
  // A plan-first phase (loop strategy plan_execute or hybrid) says so in its task message.
  const bounds = planBoundsIn(taskText);
  const replay = new Replay(history, new Set(request.tools.map((t) => t.name)), role, bounds !== undefined);
  try {
    const text = bounds ? loopScript(role, task, replay, bounds, request.tools.some((t) => t.name === SPAWN_SUB_AGENT_TOOL)) : SCRIPTS[role](task, replay, request.tools);
    return [say(text)];
  } catch (signal) {
    if (signal instanceof NextCall) {
      const id = `toolu_offline_${sha256Hex(`${role}\n${taskText}\n${history.length}\n${signal.name}\n${stableJson(signal.input)}`).slice(0, 24)}`;
      return [say(signal.say), { type: 'tool_use', id, name: signal.name, input: signal.input }];
    }
    if (signal instanceof UnexpectedState) return [say(`The conversation is in a state I cannot continue from: ${signal.reason}.`)];
    throw signal;
  }
}

function say(text: string): AssistantBlock {
  return { type: 'text', text: `[offline model ${OFFLINE_MODEL_ID}] ${text}` };
}

function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('\n');
}

// ---------------------------------------------------------------------------------------------
// What the workspace looks like, from read_file results

interface FileView {
  exists: boolean;
  content: string;
  /** read_file cut the output: the view is partial, so the file is not rewritten from it. */
  partial: boolean;
}

function viewOf(result: ToolObservation): FileView {
  if (result.isError) return { exists: false, content: '', partial: false };
  if (result.content === '(empty file)') return { exists: true, content: '', partial: false };
  const partial = /\n\[(truncated: output is capped|showing lines \d+-\d+;)/.test(result.content);
  return { exists: true, content: result.content, partial };
}

function isMet(criterion: OfflineCriterion, view: FileView | undefined): boolean {
  if (!view || !view.exists) return false;
  switch (criterion.kind) {
    case 'exists':
      return true;
    case 'contains':
      return view.content.includes(criterion.needle);
    case 'note': {
      const wanted = criterion.text.trim().toLowerCase();
      return view.content.split('\n').some((line) => line.toLowerCase().includes(wanted));
    }
  }
}

function distinctPaths(criteria: OfflineCriterion[]): string[] {
  return [...new Set(criteria.map((c) => c.path))];
}

/** read_file every path the criteria name; the views feed the role's decisions. */
function inspect(replay: Replay, criteria: OfflineCriterion[]): Map<string, FileView> {
  const views = new Map<string, FileView>();
  for (const path of distinctPaths(criteria)) {
    views.set(path, viewOf(replay.call('read_file', { path }, `Reading ${path} to check the criteria that name it.`)));
  }
  return views;
}

/** Matches "Criterion not met: <criterion>" findings (or any finding quoting a criterion) to criteria. */
function criteriaNamedBy(findings: string[], criteria: OfflineCriterion[]): OfflineCriterion[] {
  const named: OfflineCriterion[] = [];
  for (const finding of findings) {
    const f = finding.replace(/^\s*criterion not met:\s*/i, '').trim().toLowerCase();
    const match = criteria.find((c) => c.text.trim().toLowerCase() === f) ?? criteria.find((c) => finding.toLowerCase().includes(c.text.trim().toLowerCase()));
    if (match && !named.includes(match)) named.push(match);
  }
  return named;
}

// ---------------------------------------------------------------------------------------------
// The role scripts: straight-line code, replayed on every turn

type RoleScript = (task: TaskMessageInput, replay: Replay, tools: readonly ToolSpec[]) => string;

const SCRIPTS: Record<RoleName, RoleScript> = { architect, executor, reviewer };

function architect(task: TaskMessageInput, replay: Replay): string {
  const criteria = task.acceptanceCriteria.map(parseCriterion);
  replay.call('list_files', { path: '.' }, 'Architect: listing the workspace before planning.');
  const steps = criteria.map(planStep);
  const plan = [
    `Plan by the offline model ${OFFLINE_MODEL_ID} for: ${task.goal || '(no goal given)'}`,
    ...(steps.length > 0 ? steps.map((s, i) => `${i + 1}. ${s}`) : ['1. No acceptance criteria were given: confirm the goal with the reviewer.']),
  ].join('\n');
  const result = replay.call('submit_plan', { plan, steps }, `Architect: submitting a plan with ${steps.length} step(s), one per acceptance criterion.`);
  if (result.isError) return replay.finish(`submit_plan was refused (${result.content}); the offline model cannot revise its plan.`);
  return replay.finish('Architect: the plan is submitted.');
}

function planStep(criterion: OfflineCriterion): string {
  switch (criterion.kind) {
    case 'exists':
      return `Make sure ${criterion.path} exists (create it if it is missing).`;
    case 'contains':
      return `Make sure ${criterion.path} contains "${criterion.needle}".`;
    case 'note':
      return `Record in ${NOTES_FILE}: ${criterion.text}`;
  }
}

function executor(task: TaskMessageInput, replay: Replay, tools: readonly ToolSpec[]): string {
  const criteria = task.acceptanceCriteria.map(parseCriterion);
  // Offered MCP tools are shown once per run: the first read-only one is called in the first iteration.
  const probe = task.iteration === 1 ? mcpProbe(tools) : undefined;
  const probed = probe ? replay.call(probe.name, probe.input, `Executor: calling the MCP tool ${probe.name} once, to show it works.`) : undefined;
  const views = inspect(replay, criteria);
  const unmet = criteria.filter((c) => !isMet(c, views.get(c.path)));
  // Findings first (the reviewer's order), then the remaining unmet criteria, a few per iteration.
  const named = criteriaNamedBy(task.findings ?? [], criteria).filter((c) => unmet.includes(c));
  const selected = [...named, ...unmet.filter((c) => !named.includes(c))].slice(0, OFFLINE_CRITERIA_PER_ITERATION);

  const written: string[] = [];
  const skipped: string[] = [];
  const failed: string[] = [];
  // Criteria that ask for delegation go to sub-agents (after the direct writes, which they build on).
  const canDelegate = tools.some((t) => t.name === SPAWN_SUB_AGENT_TOOL);
  const delegated = selected.filter((c) => c.delegate && canDelegate);
  const direct = selected.filter((c) => !delegated.includes(c));
  for (const path of distinctPaths(direct)) {
    const forPath = direct.filter((c) => c.path === path);
    const view = views.get(path)!;
    if (view.partial) {
      skipped.push(`${path} (too large to rewrite from a partial read)`);
      continue;
    }
    const content = contentFor(path, forPath, view, task.goal);
    const result = replay.call('write_file', { path, content }, `Executor: writing ${path} for: ${forPath.map((c) => c.text).join('; ')}.`);
    (result.isError ? failed : written).push(path);
  }

  const byAgents: string[] = [];
  for (const c of delegated) {
    const result = replay.call(
      SPAWN_SUB_AGENT_TOOL,
      // Only the tools the task needs (low-risk ones: no approval is asked under the default policy).
      { role: c.delegate!, task: `Make sure this acceptance criterion is met in the workspace.\nCriterion: ${c.text}`, tools: ['read_file', 'write_file'] },
      `Executor: delegating to a ${c.delegate} sub-agent: ${c.text}.`,
    );
    if (result.isError) failed.push(`${c.path} (the sub-agent did not finish)`);
    else {
      byAgents.push(`${c.path} by a ${c.delegate} sub-agent`);
      if (!written.includes(c.path)) written.push(c.path);
    }
  }

  const unmapped = (task.findings ?? []).filter((f) => criteriaNamedBy([f], criteria).length === 0);
  const summary = [
    `Offline model ${OFFLINE_MODEL_ID}, iteration ${task.iteration}: ${selected.length > 0 ? `worked on ${selected.length} of ${unmet.length} unmet criteria: ${selected.map((c) => c.text).join('; ')}.` : 'every acceptance criterion already looks met.'}`,
    written.length > 0 ? `Wrote ${written.join(', ')}.` : '',
    byAgents.length > 0 ? `Delegated: ${byAgents.join(', ')}.` : '',
    skipped.length > 0 ? `Skipped ${skipped.join(', ')}.` : '',
    failed.length > 0 ? `Could not write ${failed.join(', ')}.` : '',
    probe && probed ? `Called the MCP tool ${probe.name}: ${probed.isError ? 'it answered with an error' : 'it answered'}.` : '',
    unmet.length > selected.length ? `Left for a later iteration: ${unmet.length - selected.length} criteria.` : '',
    unmapped.length > 0 ? `Findings the offline model cannot act on: ${unmapped.join('; ')}.` : '',
    task.humanFeedback ? `Human feedback the offline model cannot act on: ${task.humanFeedback}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const result = replay.call('submit_work', { summary, files: written }, 'Executor: submitting the work for review.');
  if (result.isError) return replay.finish(`submit_work was refused (${result.content}).`);
  return replay.finish('Executor: the work is submitted.');
}

/**
 * The MCP tool the executor calls once: the first read-only one (by its server's `readOnlyHint`)
 * in the order offered, preferring one that needs no input; otherwise one whose required inputs
 * are all simple (a string gets ".", a number 1, a boolean false, an enum its first value).
 */
export function mcpProbe(tools: readonly ToolSpec[]): { name: string; input: Record<string, unknown> } | undefined {
  const candidates = tools.filter((t) => t.name.startsWith('mcp__') && t.annotations?.readOnlyHint === true);
  let fallback: { name: string; input: Record<string, unknown> } | undefined;
  for (const tool of candidates) {
    const input = simpleInput(tool.input_schema);
    if (!input) continue;
    if (Object.keys(input).length === 0) return { name: tool.name, input };
    fallback ??= { name: tool.name, input };
  }
  return fallback;
}

function simpleInput(schema: Record<string, unknown>): Record<string, unknown> | undefined {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const input: Record<string, unknown> = {};
  for (const name of required) {
    const p = properties[name] ?? {};
    if (Array.isArray(p.enum) && p.enum.length > 0) input[name] = p.enum[0];
    else if (p.type === 'string') input[name] = '.';
    else if (p.type === 'number' || p.type === 'integer') input[name] = 1;
    else if (p.type === 'boolean') input[name] = false;
    else return undefined;
  }
  return input;
}

/** The new text of `path`: what it holds now plus what the selected criteria still need. */
function contentFor(path: string, criteria: OfflineCriterion[], view: FileView, goal: string): string {
  let content = view.exists ? view.content : path === NOTES_FILE ? '# Notes\n\n' : '';
  const append = (line: string) => {
    if (content !== '' && !content.endsWith('\n')) content += '\n';
    content += `${line}\n`;
  };
  for (const criterion of criteria) {
    if (criterion.kind === 'contains' && !content.includes(criterion.needle)) append(criterion.needle);
    if (criterion.kind === 'note' && !isMet(criterion, { exists: true, content, partial: false })) append(`- ${criterion.text}`);
  }
  if (!view.exists && content === '') append(`Created by the offline model ${OFFLINE_MODEL_ID} for: ${goal || 'the goal of this run'}`);
  return content;
}

function reviewer(task: TaskMessageInput, replay: Replay): string {
  if (task.goal.trim() === '') {
    const result = replay.call(
      'submit_verdict',
      { verdict: 'BLOCK', findings: ['The goal is empty: there is nothing to work towards or review against.'], summary: `Offline model ${OFFLINE_MODEL_ID}: blocked, the run has no goal.` },
      'Reviewer: the goal is empty, so the run is blocked.',
    );
    return replay.finish(result.isError ? `submit_verdict was refused (${result.content}).` : 'Reviewer: the verdict is submitted.');
  }
  const criteria = task.acceptanceCriteria.map(parseCriterion);
  const views = inspect(replay, criteria);
  const unmet = criteria.filter((c) => !isMet(c, views.get(c.path)));
  const verdict = unmet.length === 0 ? 'APPROVE' : 'REQUEST_CHANGES';
  const summary =
    `Offline model ${OFFLINE_MODEL_ID}: ${criteria.length - unmet.length} of ${criteria.length} acceptance criteria met` +
    (unmet.length === 0 ? '; approved.' : '; changes requested.');
  const result = replay.call(
    'submit_verdict',
    { verdict, findings: unmet.map((c) => `Criterion not met: ${c.text}`), summary },
    `Reviewer: ${unmet.length === 0 ? 'every criterion is met' : `${unmet.length} criterion(s) not met`}, submitting ${verdict}.`,
  );
  return replay.finish(result.isError ? `submit_verdict was refused (${result.content}).` : 'Reviewer: the verdict is submitted.');
}

// ---------------------------------------------------------------------------------------------
// A plan-first phase: plan, steps, close

/** The plan's bounds the task message asks for (domain/loop-strategy.ts, `stageMessage`), if it asks for a plan. */
function planBoundsIn(taskText: string): { min: number; max: number } | undefined {
  const m = /make a plan in (\d+) to (\d+) steps/.exec(taskText);
  return m ? { min: Number(m[1]), max: Number(m[2]) } : undefined;
}

interface OfflineStep {
  text: string;
  /** The criteria the step works on (none: a step that looks over the workspace). */
  criteria: OfflineCriterion[];
}

/** One step per criterion, grouped into at most `max` steps, padded to `min` with a look over the workspace. */
function offlinePlan(role: RoleName, criteria: OfflineCriterion[], bounds: { min: number; max: number }): OfflineStep[] {
  const groups: OfflineCriterion[][] = [];
  const per = Math.ceil(criteria.length / Math.max(1, bounds.max));
  for (let i = 0; i < criteria.length; i += per) groups.push(criteria.slice(i, i + per));
  const steps: OfflineStep[] = groups.map((group) => ({ text: stepText(role, group), criteria: group }));
  while (steps.length < bounds.min) steps.push({ text: `Look over the workspace as a whole (${steps.length + 1}).`, criteria: [] });
  return steps;
}

function stepText(role: RoleName, group: OfflineCriterion[]): string {
  const text = role === 'executor' ? group.map(planStep).join(' ') : `Check ${group.map((c) => `${c.path} for: ${c.text}`).join('; ')}`;
  return text.length > MAX_STEP_TEXT ? `${text.slice(0, MAX_STEP_TEXT - 1)}…` : text;
}

const FAIL_TRIGGER = /fail the first step/i;

function loopScript(role: RoleName, task: TaskMessageInput, replay: Replay, bounds: { min: number; max: number }, canDelegate: boolean): string {
  const criteria = task.acceptanceCriteria.map(parseCriterion);
  const plan = offlinePlan(role, criteria, bounds);
  const steps = plan.map((s) => s.text);
  const planned = replay.call(SUBMIT_STEPS, { steps }, `${capitalised(role)}: planning ${steps.length} step(s).`);
  if (planned.isError) return replay.finish(`submit_steps was refused (${planned.content}).`);
  if (task.acceptanceCriteria.some((c) => FAIL_TRIGGER.test(c))) {
    replay.call(FAIL_STEP, { reason: 'an acceptance criterion asks the offline model to fail the first step once' }, `${capitalised(role)}: failing the first step, as asked.`);
    const again = replay.call(SUBMIT_STEPS, { steps }, `${capitalised(role)}: replanning the same ${steps.length} step(s).`);
    if (again.isError) return replay.finish(`submit_steps was refused (${again.content}).`);
  }
  const met = new Map<OfflineCriterion, boolean>();
  const written: string[] = [];
  const summaries: string[] = [];
  for (const [i, step] of plan.entries()) {
    const summary = workStep(role, step, replay, task.goal, met, written, canDelegate);
    summaries.push(`${i + 1}. ${summary}`);
    const done = replay.call(COMPLETE_STEP, { summary }, `${capitalised(role)}: step ${i + 1} of ${plan.length} is done.`);
    if (done.isError) return replay.finish(`complete_step was refused (${done.content}).`);
  }
  return closeLoop(role, task, replay, criteria, met, written, summaries);
}

/**
 * One step's tool calls; returns its summary. The executor writes what is unmet, and hands a
 * criterion that asks for delegation to a sub-agent when `spawn_sub_agent` is offered (after the
 * direct write of the same file, which it builds on), as in its plain loop.
 */
function workStep(
  role: RoleName,
  step: OfflineStep,
  replay: Replay,
  goal: string,
  met: Map<OfflineCriterion, boolean>,
  written: string[],
  canDelegate: boolean,
): string {
  if (step.criteria.length === 0) {
    const listing = replay.call('list_files', { path: '.' }, `${capitalised(role)}: looking over the workspace.`);
    return listing.isError ? 'The workspace could not be listed.' : 'Looked over the workspace.';
  }
  const notes: string[] = [];
  for (const path of distinctPaths(step.criteria)) {
    const forPath = step.criteria.filter((c) => c.path === path);
    const view = viewOf(replay.call('read_file', { path }, `${capitalised(role)}: reading ${path}.`));
    const unmet = forPath.filter((c) => !isMet(c, view));
    for (const c of forPath) met.set(c, !unmet.includes(c));
    if (role !== 'executor' || unmet.length === 0) {
      notes.push(`${path}: ${forPath.length - unmet.length} of ${forPath.length} criteria met`);
      continue;
    }
    const delegated = canDelegate ? unmet.filter((c) => c.delegate) : [];
    const direct = unmet.filter((c) => !delegated.includes(c));
    if (direct.length > 0) {
      if (view.partial) notes.push(`${path}: too large to rewrite from a partial read`);
      else {
        const result = replay.call('write_file', { path, content: contentFor(path, direct, view, goal) }, `Executor: writing ${path}.`);
        if (result.isError) notes.push(`${path}: could not be written`);
        else {
          notes.push(`${path}: written`);
          if (!written.includes(path)) written.push(path);
        }
      }
    }
    for (const c of delegated) {
      const result = replay.call(
        SPAWN_SUB_AGENT_TOOL,
        { role: c.delegate!, task: `Make sure this acceptance criterion is met in the workspace.\nCriterion: ${c.text}`, tools: ['read_file', 'write_file'] },
        `Executor: delegating to a ${c.delegate} sub-agent: ${c.text}.`,
      );
      if (result.isError) notes.push(`${path}: the ${c.delegate} sub-agent did not finish`);
      else {
        notes.push(`${path}: done by a ${c.delegate} sub-agent`);
        if (!written.includes(path)) written.push(path);
      }
    }
  }
  return `${notes.join('; ')}.`;
}

/** The role's usual submission once every step is done. */
function closeLoop(
  role: RoleName,
  task: TaskMessageInput,
  replay: Replay,
  criteria: OfflineCriterion[],
  met: Map<OfflineCriterion, boolean>,
  written: string[],
  summaries: string[],
): string {
  let result: ToolObservation;
  if (role === 'architect') {
    const steps = criteria.map(planStep);
    const plan = [`Plan by the offline model ${OFFLINE_MODEL_ID} for: ${task.goal}`, ...steps.map((s, i) => `${i + 1}. ${s}`)].join('\n');
    result = replay.call('submit_plan', { plan, steps }, 'Architect: submitting the plan.');
  } else if (role === 'executor') {
    const summary = `Offline model ${OFFLINE_MODEL_ID}, iteration ${task.iteration}, ${summaries.length} step(s): ${summaries.join(' ')}`;
    result = replay.call('submit_work', { summary, files: written }, 'Executor: submitting the work for review.');
  } else {
    const unmet = criteria.filter((c) => !met.get(c));
    const verdict = unmet.length === 0 ? 'APPROVE' : 'REQUEST_CHANGES';
    const summary = `Offline model ${OFFLINE_MODEL_ID}: ${criteria.length - unmet.length} of ${criteria.length} acceptance criteria met; ${unmet.length === 0 ? 'approved' : 'changes requested'}.`;
    result = replay.call('submit_verdict', { verdict, findings: unmet.map((c) => `Criterion not met: ${c.text}`), summary }, `Reviewer: submitting ${verdict}.`);
  }
  return replay.finish(result.isError ? `the submission was refused (${result.content}).` : `${capitalised(role)}: submitted.`);
}

function capitalised(role: string): string {
  return role[0].toUpperCase() + role.slice(1);
}

// ---------------------------------------------------------------------------------------------
// A sub-agent: the executor delegated one criterion (`Criterion: <text>` in its task)

function respondAsSubAgent(request: ModelRequest, sub: { role: string; path: string }): AssistantBlock[] {
  const first = request.messages.find((m) => m.role === 'user');
  const taskText = first ? textOf(first) : '';
  const history = takenSteps(request.messages.slice(1));
  if (typeof history === 'string') return [say(`The conversation is in a state I cannot continue from: ${history}.`)];
  const replay = new Replay(history, new Set(request.tools.map((t) => t.name)), request.role);
  try {
    return [say(subAgentScript(sub.role, taskText, replay))];
  } catch (signal) {
    if (signal instanceof NextCall) {
      const id = `toolu_offline_${sha256Hex(`sub-agent ${sub.path}\n${taskText}\n${history.length}\n${signal.name}\n${stableJson(signal.input)}`).slice(0, 24)}`;
      return [say(signal.say), { type: 'tool_use', id, name: signal.name, input: signal.input }];
    }
    if (signal instanceof UnexpectedState) return [say(`The conversation is in a state I cannot continue from: ${signal.reason}.`)];
    throw signal;
  }
}

function subAgentScript(role: string, taskText: string, replay: Replay): string {
  const line = /^Criterion: (.+)$/m.exec(taskText);
  if (!line) return replay.finish(`Sub-agent ${role}: the offline model acts only on a task with a "Criterion: <criterion>" line; nothing was done.`);
  const criterion = parseCriterion(line[1].trim());
  const view = viewOf(replay.call('read_file', { path: criterion.path }, `Sub-agent ${role}: reading ${criterion.path}.`));
  if (isMet(criterion, view)) return replay.finish(`Sub-agent ${role}: ${criterion.path} already meets "${criterion.text}".`);
  if (view.partial) return replay.finish(`Sub-agent ${role}: ${criterion.path} is too large to rewrite from a partial read; nothing was done.`);
  const content = contentFor(criterion.path, [criterion], view, '');
  const result = replay.call('write_file', { path: criterion.path, content }, `Sub-agent ${role}: writing ${criterion.path}.`);
  if (result.isError) return replay.finish(`Sub-agent ${role}: could not write ${criterion.path}: ${result.content}`);
  return replay.finish(`Sub-agent ${role}: wrote ${criterion.path} for "${criterion.text}".`);
}
