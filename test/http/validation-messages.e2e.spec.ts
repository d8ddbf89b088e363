import { startE2eApp, type E2eApp, type KeyName } from '../support/e2e-app';

// Every validated body answers 400 with one message per real problem, over real HTTP through the
// real app: a field left out is `<field> is required` (not its type and limits as well), a wrong
// type is said once, a limit only when it is exceeded, a nested field by its path. Bodies are
// checked before a handler looks anything up, so the ids here need not exist.

let app: E2eApp;

beforeAll(async () => {
  app = await startE2eApp();
}, 30_000);
afterAll(async () => {
  await app?.close();
});

interface Case {
  route: string;
  as?: KeyName | null;
  body: unknown;
  messages: string[];
}

const launch = { goal: 'Write a greeting', acceptanceCriteria: ['file hello.txt exists'] };
const run = '/v1/runs/run_00000000000000000000000000';
const review = '/v1/reviews/rev_run_00000000000000000000000000_1';
const approval = '/v1/approvals/apr_run_00000000000000000000000000_1';
const project = '/v1/projects/prj_00000000000000000000000000';

const CASES: Case[] = [
  { route: '/v1/runs', body: { goal: 'x' }, messages: ['acceptanceCriteria is required'] },
  { route: '/v1/runs', body: {}, messages: ['goal is required', 'acceptanceCriteria is required'] },
  { route: '/v1/runs', body: { goal: '', acceptanceCriteria: [] }, messages: ['goal should not be empty', 'acceptanceCriteria must contain at least 1 elements'] },
  { route: '/v1/runs', body: { goal: 5, acceptanceCriteria: 'file a exists' }, messages: ['goal must be a string', 'acceptanceCriteria must be an array'] },
  { route: '/v1/runs', body: { goal: 'x', acceptanceCriteria: ['ok', 7] }, messages: ['each value in acceptanceCriteria must be a string'] },
  { route: '/v1/runs', body: { ...launch, maxIterations: 51 }, messages: ['maxIterations must not be greater than 50'] },
  { route: '/v1/runs', body: { ...launch, maxIterations: '2' }, messages: ['maxIterations must be an integer number'] },
  { route: '/v1/runs', body: { ...launch, team: 'all' }, messages: ['team must be an object'] },
  { route: '/v1/runs', body: { ...launch, team: { executor: { model: 5 } } }, messages: ['team.executor.model must be a string'] },
  { route: '/v1/runs', body: { ...launch, team: { executor: { loop: {} } } }, messages: ['team.executor.loop.strategy is required'] },
  { route: '/v1/runs', body: { ...launch, extra: 1 }, messages: ['property extra should not exist'] },
  { route: '/v1/runs', body: { ...launch, team: { executor: { extra: 1 } } }, messages: ['property team.executor.extra should not exist'] },
  { route: `${run}/cancel`, body: { reason: 5 }, messages: ['reason must be a string'] },
  { route: `${review}/approve`, as: 'reviewer', body: {}, messages: ['reason is required'] },
  { route: `${review}/approve`, as: 'reviewer', body: { reason: '' }, messages: ['reason should not be empty'] },
  { route: `${review}/approve`, as: 'reviewer', body: { reason: 'x'.repeat(4001) }, messages: ['reason must be shorter than or equal to 4000 characters'] },
  { route: `${review}/reject`, as: 'reviewer', body: { reason: 'no', rework: 'false' }, messages: ['rework must be a boolean value'] },
  { route: `${review}/reject`, as: 'reviewer', body: { rework: false }, messages: ['reason is required'] },
  { route: `${approval}/approve`, as: 'reviewer', body: { reason: '  ' }, messages: ['reason must not be blank'] },
  { route: `${approval}/reject`, as: 'reviewer', body: {}, messages: ['reason is required'] },
  { route: '/v1/projects', body: {}, messages: ['goal is required'] },
  { route: '/v1/projects', body: { goal: 'P', tasks: [{ key: 'a' }] }, messages: ['tasks.0.goal is required', 'tasks.0.acceptanceCriteria is required'] },
  { route: '/v1/projects', body: { goal: 'P', concurrency: 0 }, messages: ['concurrency must not be less than 1'] },
  { route: `${project}/review/approve`, as: 'reviewer', body: {}, messages: ['reason is required'] },
  { route: `${run}/fork`, body: {}, messages: ['turn is required'] },
  { route: `${run}/fork`, body: { turn: -1 }, messages: ['turn must not be less than 0'] },
  { route: `${run}/resume`, body: { endpoint: 5 }, messages: ['endpoint must be a string'] },
  { route: '/v1/session', as: null, body: {}, messages: ['apiKey is required'] },
  { route: '/v1/auth/passkeys', body: {}, messages: ['response is required'] },
];

describe('a bad body answers one message per problem', () => {
  it.each(CASES.map((c) => [`${c.route} ${JSON.stringify(c.body).slice(0, 60)}`, c] as const))('%s', async (_name, c) => {
    const res = await app.request<{ statusCode: number; error: string; message: string[] }>('POST', c.route, { as: c.as === undefined ? 'operator' : c.as, body: c.body });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { statusCode: 400, error: 'Bad Request', message: c.messages } });
  });
});
