import { join } from 'node:path';
import type { ProjectView } from '../../src/projects/domain/project-decider';
import { runCliInProcess, stopInProcessCli } from '../support/in-process-cli';
import { tempDir } from '../support/temp-dir';

// `triad project ...` in-process against a real SQLite store and the offline model: no key, no network.

jest.setTimeout(120_000);

const dir = tempDir('triad-project-cli-');
const dataDir = join(dir.path, 'data');

function env(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRIAD_') && !k.startsWith('ANTHROPIC_')) base[k] = v;
  return { ...base, TRIAD_DATA_DIR: dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline', TRIAD_USER: 'ann', TRIAD_API_KEYS: `ann:operator+reviewer:${ANN_KEY},rita:reviewer:${RITA_KEY}` };
}
const ANN_KEY = 'ann-project-key-0123';
const RITA_KEY = 'rita-project-key-0123';
const triad = (args: string[], extra: NodeJS.ProcessEnv = {}) => runCliInProcess(args, { ...env(), ...extra });

afterAll(async () => {
  await stopInProcessCli();
  dir.remove();
});

it('project run decomposes the goal with the offline architect, drives the tasks here, and waits at the project review; approve completes it', async () => {
  const run = await triad(['project', 'run', 'Two files', '--criteria', 'file x.txt exists', 'file y.txt exists', '--json']);
  expect(run.code).toBe(0);
  const project = JSON.parse(run.stdout) as ProjectView;
  expect(project).toMatchObject({ status: 'awaiting_review', planning: { source: 'architect' } });
  expect(project.tasks.map((t) => [t.key, t.status])).toEqual([
    ['task-1', 'completed'],
    ['task-2', 'completed'],
  ]);

  const shown = await triad(['project', 'show', project.projectId]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/awaiting_review[\s\S]*task-1\s+completed[\s\S]*task-2\s+completed\s+run run_\w+ after task-1/);

  // No self-review: ann launched it; a name alone decides nothing.
  expect((await triad(['project', 'approve', project.projectId, '--reason', 'mine'], { TRIAD_API_KEY: ANN_KEY })).code).toBe(5);
  const byName = await triad(['project', 'approve', project.projectId, '--reason', 'as rita', '--as', 'rita']);
  expect(byName.code).toBe(5);
  expect(byName.stderr).toMatch(/^triad: deciding needs a credential.*\n$/);
  const approved = await triad(['project', 'approve', project.projectId, '--reason', 'both files are there', '--json'], { TRIAD_API_KEY: RITA_KEY });
  expect(approved.code).toBe(0);
  expect(JSON.parse(approved.stdout)).toMatchObject({ status: 'completed' });

  const list = await triad(['project', 'list']);
  expect(list.stdout).toContain(project.projectId);
});

it('project run with tasks: a bad graph is exit 2 with one line; a given dag runs to the review', async () => {
  const cyclic = await triad(['project', 'run', 'Bad', '--task', '{"key":"a","goal":"a","acceptanceCriteria":["file a exists"],"dependsOn":["b"]}', '{"key":"b","goal":"b","acceptanceCriteria":["file b exists"],"dependsOn":["a"]}']);
  expect(cyclic.code).toBe(2);
  expect(cyclic.stderr).toMatch(/^triad: .*cycle: a -> b -> a\n$/);
  expect((await triad(['project', 'run', 'Bad', '--task', 'not json'])).code).toBe(2);
  // One reading of a task: a key given twice is refused, not read as its last value.
  const twice = await triad(['project', 'run', 'Bad', '--task', '{"key":"a","goal":"a","acceptanceCriteria":["file a exists"],"dependsOn":[],"dependsOn":["b"]}']);
  expect(twice.code).toBe(2);
  expect(twice.stderr).toBe('triad: --task.dependsOn is given twice; a key may appear once in an object\n');
  expect((await triad(['project', 'rnu', 'x'])).code).toBe(2);
  expect((await triad(['project', 'show', 'prj_nope'])).code).toBe(3);

  const ok = await triad(['project', 'run', 'One file', '--task', '{"key":"one","goal":"Write one.txt","acceptanceCriteria":["file one.txt exists"]}', '--strategy', 'sequential', '--json']);
  expect(ok.code).toBe(0);
  const project = JSON.parse(ok.stdout) as ProjectView;
  expect(project.status).toBe('awaiting_review');
  const cancelled = await triad(['project', 'cancel', project.projectId, '--reason', 'changed my mind']);
  expect(cancelled.code).toBe(0);
  expect(cancelled.stdout).toMatch(/cancelled \(CANCELLED\)/);
});
