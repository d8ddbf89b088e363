import type { INestApplicationContext } from '@nestjs/common';
import { instanceToPlain } from 'class-transformer';
import type { Command } from 'commander';
import { PROJECT_STATUSES, type ProjectStatus } from '../../projects/domain/project-events';
import type { ProjectView } from '../../projects/domain/project-decider';
import { LaunchProjectDto } from '../../projects/http/project.dto';
import { DEFAULT_PROJECT_STRATEGY, ProjectsService, type LaunchProjectInput } from '../../projects/projects.service';
import { normaliseTask, taskGraphProblem } from '../../projects/domain/task-graph';
import { MODEL_PROVIDER, type ModelProvider } from '../../team/models/model.port';
import { RunsProjection } from '../../team/runs/runs.projection';
import type { CliContext } from '../cli-context';
import { CliError, EXIT } from '../exit-codes';
import { providerLine } from '../format';
import { cliIdentity, decisionReason, int } from '../options';
import { cliKeyHolder } from '../decider-credential';
import { flagFor, refusedInFlags, type FlagOfField } from '../flag-messages';
import { validateAsFlags } from '../validate-body';
import { duplicateKeyIn, duplicateKeyMessage } from '../../shared/strict-json';

const WAITING_FOR_A_HUMAN = new Set(['awaiting_review', 'awaiting_approval']);

/** `triad project run|list|show|cancel|retry|approve|reject`. */
export function addProjectCommands(program: Command, ctx: CliContext): void {
  const { withApp, print, output } = ctx;
  const project = program.command('project').description('run goals as graphs of tasks, each task a team run');
  project
    .command('run')
    .description('launch a project and drive its task runs here until it waits for its review or ends')
    .argument('<goal>', 'what the project should achieve')
    .option('-c, --criteria <criterion...>', 'acceptance criteria of the whole project')
    .option('--task <json...>', 'a task as JSON {"key","goal","acceptanceCriteria":[...],"dependsOn":[...]} (repeatable); without tasks the architect decomposes the goal')
    .option('--strategy <strategy>', 'sequential | parallel | dag (default dag)')
    .option('--concurrency <n>', 'task runs at once (default 10)', int('--concurrency', 1, 100))
    .option('--per-task-review', 'each task run waits at its own review gate instead of one project review')
    .option('--no-human-gate', 'no project review: the project completes when its tasks have')
    .option('--max-iterations <n>', 'maximum executor/reviewer iterations of each task run', int('--max-iterations', 1, 20))
    .option('--idempotency-key <key>', 'launch at most once per key')
    .option('--as <user>', 'launch as this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print the project as JSON')
    .action(async (goal: string, opts) => {
      const identity = cliIdentity(opts.as);
      const tasks = (opts.task as string[] | undefined)?.map(parseTask);
      const body = await validate({
        goal,
        ...(opts.criteria ? { acceptanceCriteria: opts.criteria } : {}),
        ...(tasks ? { tasks } : {}),
        ...(opts.strategy !== undefined ? { strategy: opts.strategy } : {}),
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        ...(opts.perTaskReview || opts.humanGate === false ? { reviewPolicy: { ...(opts.perTaskReview ? { perTask: true } : {}), ...(opts.humanGate === false ? { humanGate: false } : {}) } } : {}),
        ...(opts.maxIterations !== undefined ? { run: { maxIterations: opts.maxIterations } } : {}),
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      });
      // A bad graph is refused before the app opens (the launch would refuse it too, writing nothing).
      if (body.tasks) {
        const problem = taskGraphProblem(body.tasks.map((t) => normaliseTask({ ...t, dependsOn: t.dependsOn ?? [] })), body.strategy ?? DEFAULT_PROJECT_STRATEGY);
        if (problem) throw new CliError(problem, EXIT.usage);
      }
      process.exitCode = await withApp(async (app) => {
        if (!opts.json) output.err(`${providerLine(app.get<ModelProvider>(MODEL_PROVIDER))}\n`);
        const projects = app.get(ProjectsService);
        const { projectId, acceptedAt } = await refusedInFlags(PROJECT_FLAGS, () => projects.launch(instanceToPlain(body) as LaunchProjectInput, identity));
        if (!opts.json) output.out(`project ${projectId} accepted at ${acceptedAt}\n`);
        return driveProjectHere(app, projectId, ctx, opts.json);
      });
    });
  project
    .command('list', { isDefault: true })
    .option('--status <status>', `only projects with this status (${PROJECT_STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many', int('--limit', 1, 10000), 50)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      if (opts.status !== undefined && !PROJECT_STATUSES.includes(opts.status)) throw new CliError(`--status must be one of ${PROJECT_STATUSES.join(', ')}`, EXIT.usage);
      await withApp(async (app) => {
        const list = await app.get(ProjectsService).list({ status: opts.status as ProjectStatus | undefined, limit: opts.limit });
        print(opts.json, list, () =>
          list.length === 0 ? 'no projects' : list.map((p) => `${p.projectId}  ${p.status.padEnd(15)} ${String(p.tasks.length).padStart(3)} task(s)  ${p.launchedAt}  ${p.goal.slice(0, 50)}`).join('\n'),
        );
      });
    });
  project
    .command('show')
    .argument('<projectId>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts) => {
      await withApp(async (app) => {
        const view = await app.get(ProjectsService).get(id, true);
        print(opts.json, view, () => describeProject(view));
      });
    });
  project
    .command('cancel')
    .argument('<projectId>')
    .option('--reason <text>', 'why (recorded)')
    .option('--as <user>', 'act as this user')
    .option('--json', 'print JSON')
    .action(async (id: string, opts) => {
      const who = cliIdentity(opts.as);
      const reason = decisionReason(opts.reason, false);
      await withApp(async (app) => {
        const view = await app.get(ProjectsService).cancel(id, who, reason);
        print(opts.json, view, () => describeProject(view));
      });
    });
  project
    .command('retry')
    .description('start a failed task again (its skipped dependents with it) and drive the project here')
    .argument('<projectId>')
    .argument('<taskKey>')
    .option('--as <user>', 'act as this user')
    .option('--json', 'print JSON')
    .action(async (id: string, key: string, opts) => {
      const who = cliIdentity(opts.as);
      process.exitCode = await withApp(async (app) => {
        await app.get(ProjectsService).retry(id, key, who);
        return driveProjectHere(app, id, ctx, opts.json);
      });
    });
  for (const decision of ['approve', 'reject'] as const) {
    project
      .command(decision)
      .description(`${decision} a project waiting at its review`)
      .argument('<projectId>')
      .requiredOption('--reason <text>', 'why (recorded)')
      .option('--key-file <file>', 'your API key, read from this file (default: the TRIAD_API_KEY variable)')
      .option('--as <user>', 'check that the key is this user’s (the decider is always the key’s holder)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts) => {
        const reason = decisionReason(opts.reason, true);
        await withApp(async (app) => {
          const who = cliKeyHolder(app, opts, 'review');
          const view = await app.get(ProjectsService).decideReview(id, decision, who, reason);
          print(opts.json, view, () => describeProject(view));
        });
      });
  }
}

/**
 * Reacts to the project here (its task runs driven in this process) until it waits for its review,
 * ends, or every task still going waits for a human; prints it. 0 unless it failed or was cancelled.
 */
async function driveProjectHere(app: INestApplicationContext, projectId: string, { output, print }: CliContext, json: boolean): Promise<number> {
  const projects = app.get(ProjectsService);
  const runs = app.get(RunsProjection);
  await projects.start({ driveHere: true });
  let view = await projects.get(projectId, true);
  let shown = '';
  for (;;) {
    const line = view.tasks.map((t) => `${t.key}:${t.status}`).join(' ');
    if (!json && line !== shown && line !== '') output.err(`  ${view.status}  ${line}\n`);
    shown = line;
    if (view.status !== 'planning' && view.status !== 'running') break;
    const going = view.tasks.filter((t) => t.status === 'running');
    if (going.length > 0) {
      // A read model behind or failing is shown as it is; the next round looks again.
      await runs.catchUp().catch(() => undefined);
      if (going.every((t) => WAITING_FOR_A_HUMAN.has(runs.get(t.runId!)?.status ?? ''))) break;
    }
    await new Promise((r) => setTimeout(r, 100));
    view = await projects.get(projectId, true);
  }
  await projects.reactor.idle();
  print(json, view, () => describeProject(view));
  return view.status === 'failed' || view.status === 'cancelled' ? EXIT.failed : EXIT.ok;
}

export function describeProject(p: ProjectView): string {
  const lines = [
    `project ${p.projectId}  ${p.status}${p.terminationReason ? ` (${p.terminationReason})` : ''}`,
    `  goal: ${p.goal}`,
    `  strategy: ${p.strategy}, concurrency ${p.concurrency}; review: ${p.reviewPolicy.perTask ? 'per task' : p.reviewPolicy.humanGate ? 'once per project' : 'none'}`,
  ];
  if (p.message) lines.push(`  ${p.message}`);
  if (p.planning?.failure) lines.push(`  planning failed: ${p.planning.failure}`);
  for (const t of p.tasks) {
    const deps = t.dependsOn.length > 0 ? ` after ${t.dependsOn.join(', ')}` : '';
    const run = t.runId ? `  run ${t.runId}${t.attempt > 1 ? ` (attempt ${t.attempt})` : ''}` : '';
    const why = t.skippedBecause ? `  (skipped: '${t.skippedBecause}' failed)` : t.terminationReason && t.status === 'failed' ? `  (${t.terminationReason})` : '';
    lines.push(`  - ${t.key.padEnd(12)} ${t.status.padEnd(10)}${run}${why}${deps}`);
  }
  if (p.status === 'awaiting_review') lines.push(`  waiting for a reviewer: triad project approve|reject ${p.projectId} --reason "..."`);
  return lines.join('\n');
}

function parseTask(raw: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(raw) as unknown;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(`--task takes a JSON object {"key","goal","acceptanceCriteria":[...],"dependsOn":[...]}, got '${raw.slice(0, 80)}'`, EXIT.usage);
  }
  const duplicate = duplicateKeyIn(raw, '--task');
  if (duplicate !== undefined) throw new CliError(duplicateKeyMessage(duplicate), EXIT.usage);
  return value;
}

/** The body's fields as `triad project run` sets them, for its refusals (a task by its place among the `--task`s). */
const PROJECT_FLAGS: readonly FlagOfField[] = [
  flagFor('goal', 'the goal'),
  flagFor('acceptanceCriteria', '--criteria'),
  { field: /^tasks\.(\d+)\.(.+)$/, flag: (m) => `--task ${Number(m[1]) + 1}: ${m[2]}` },
  flagFor('tasks', '--task'),
  flagFor('strategy', '--strategy'),
  flagFor('concurrency', '--concurrency'),
  flagFor('run.maxIterations', '--max-iterations'),
  flagFor('idempotencyKey', '--idempotency-key'),
];

/** The same checks as `POST /v1/projects`; a refusal is exit 2 naming the flags. */
function validate(body: unknown): Promise<LaunchProjectDto> {
  return validateAsFlags(LaunchProjectDto, body, PROJECT_FLAGS);
}
