import { useState } from 'preact/hooks';
import { api, type ProjectView } from '../api';
import { dependencyOrder } from '../graphs';
import { useFreshRead } from '../use-fresh-read';
import { href } from '../router';
import { useMay } from '../session';
import { ErrorNote, fmtTime, Notice, StatusBadge, Table } from '../ui';

/** A project has ended for good: nothing will change it any more (failed by its tasks may be retried). */
const finished = (p: ProjectView) => p.status === 'completed' || p.status === 'cancelled' || (p.status === 'failed' && p.terminationReason !== 'TASKS_FAILED');

export function ProjectsPage() {
  const { value, error } = useFreshRead(() => api.projects(), [], { everyMs: 3000 });
  const projects = value?.projects;
  return (
    <>
      <h1>Projects</h1>
      <p class="hint">A project is a goal done as a graph of tasks, each task a run. Projects are launched through the API or the CLI.</p>
      <ErrorNote error={error} />
      {projects && projects.length === 0 ? <p>No project yet.</p> : null}
      {projects && projects.length > 0 ? (
        <Table label="Projects" columns={['Goal', 'Status', 'Tasks completed', 'Launched']}>
          {projects.map((p) => (
            <tr key={p.projectId}>
              <th scope="row">
                <a href={href.project(p.projectId)}>{p.goal}</a>
              </th>
              <td>
                <StatusBadge status={p.status} />
              </td>
              <td>
                {p.tasks.filter((t) => t.status === 'completed').length} of {p.tasks.length}
              </td>
              <td>
                {fmtTime(p.launchedAt)} by {p.launchedBy}
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </>
  );
}

export function ProjectPage({ projectId }: { projectId: string }) {
  const canOperate = useMay('operateRuns');
  const canReview = useMay('review');
  const { value: project, setValue: setProject, error } = useFreshRead(() => api.project(projectId), [projectId], { everyMs: 2000 });
  const [actionError, setActionError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [approveReason, setApproveReason] = useState('');
  const [rejectReason, setRejectReason] = useState('');

  const act = async (f: () => Promise<ProjectView>, what: (p: ProjectView) => string) => {
    setBusy(true);
    setActionError(null);
    setNotice(null);
    try {
      const p = await f();
      // Shown at once; a poll begun before the action cannot replace it.
      setProject(p);
      setNotice(what(p));
    } catch (err) {
      setActionError(err);
    } finally {
      setBusy(false);
    }
  };
  const status = (p: ProjectView) => p.status.replace(/_/g, ' ');

  return (
    <>
      <p>
        <a href={href.projects()}>← Projects</a>
      </p>
      <h1>Project</h1>
      <ErrorNote error={error} />
      {project ? (
        <>
          <section aria-label="Project summary" class="card">
            <p class="goal">{project.goal}</p>
            <dl class="facts">
              <dt>Project</dt>
              <dd class="mono">{project.projectId}</dd>
              <dt>Status</dt>
              <dd>
                <StatusBadge status={project.status} />
              </dd>
              {project.terminationReason ? (
                <>
                  <dt>Termination reason</dt>
                  <dd>
                    <strong>{project.terminationReason}</strong>
                    {project.message ? ` — ${project.message}` : ''}
                  </dd>
                </>
              ) : null}
              <dt>Strategy</dt>
              <dd>
                {project.strategy} · up to {project.concurrency} runs at once
              </dd>
              <dt>Review</dt>
              <dd>
                {project.reviewPolicy.perTask ? 'each task run at its own gate' : project.reviewPolicy.humanGate ? 'one review of the whole project' : 'none'}
                {project.review?.decision ? ` · ${project.review.decision.decision === 'approve' ? 'approved' : 'rejected'} by ${project.review.decision.by}: ${project.review.decision.reason}` : ''}
              </dd>
              <dt>Launched</dt>
              <dd>
                {fmtTime(project.launchedAt)} by {project.launchedBy}
              </dd>
              {project.planning ? (
                <>
                  <dt>Planned by</dt>
                  <dd>{project.planning.source === 'architect' ? 'the architect' : 'the launcher'}{project.planning.failure ? ` · failed: ${project.planning.failure}` : ''}</dd>
                </>
              ) : null}
            </dl>
            {project.acceptanceCriteria.length > 0 ? (
              <>
                <h2>Criteria</h2>
                <ul>
                  {project.acceptanceCriteria.map((c, i) => (
                    <li key={i}>{c}</li>
                  ))}
                </ul>
              </>
            ) : null}
            {canOperate && !finished(project) ? (
              <div class="actions">
                <button type="button" disabled={busy} onClick={() => act(() => api.cancelProject(projectId, 'cancelled from the console'), (p) => `Cancelled; the project is now ${status(p)}.`)}>
                  Cancel project
                </button>
              </div>
            ) : null}
          </section>
          {notice ? <Notice>{notice}</Notice> : null}
          <ErrorNote error={actionError} />
          {canReview && project.status === 'awaiting_review' ? (
            <section aria-labelledby="project-review-heading" class="card">
              <h2 id="project-review-heading">Review of the project</h2>
              <p>Every task has completed; the project waits for a reviewer.</p>
              <div class="decide">
                <form
                  aria-label="Approve the project"
                  onSubmit={(e) => {
                    e.preventDefault();
                    act(() => api.approveProject(projectId, approveReason), (p) => `Project approved; it is now ${status(p)}.`);
                  }}
                >
                  <label for="project-approve">Reason for approving</label>
                  <textarea id="project-approve" required rows={2} value={approveReason} onInput={(e) => setApproveReason(e.currentTarget.value)} />
                  <button type="submit" disabled={busy}>
                    Approve project
                  </button>
                </form>
                <form
                  aria-label="Reject the project"
                  onSubmit={(e) => {
                    e.preventDefault();
                    act(() => api.rejectProject(projectId, rejectReason), (p) => `Project rejected; it is now ${status(p)}.`);
                  }}
                >
                  <label for="project-reject">Reason for rejecting</label>
                  <textarea id="project-reject" required rows={2} value={rejectReason} onInput={(e) => setRejectReason(e.currentTarget.value)} />
                  <button type="submit" disabled={busy}>
                    Reject project
                  </button>
                </form>
              </div>
            </section>
          ) : null}
          <section aria-labelledby="tasks-heading">
            <h2 id="tasks-heading">Tasks</h2>
            <p class="hint">In dependency order: a task starts once every task it depends on has completed.</p>
            <Table label="Tasks" columns={['Task', 'Goal', 'Depends on', 'Status', 'Attempt', 'Run', canOperate ? 'Actions' : null]}>
              {dependencyOrder(project.tasks).map((t) => (
                <tr key={t.key}>
                  <th scope="row" class="mono">
                    {t.key}
                  </th>
                  <td>{t.goal}</td>
                  <td>{t.dependsOn.length > 0 ? t.dependsOn.join(', ') : '—'}</td>
                  <td>
                    <StatusBadge status={t.status} />
                    {t.skippedBecause ? ` (${t.skippedBecause} failed)` : ''}
                    {t.terminationReason && t.status !== 'completed' ? ` · ${t.terminationReason}` : ''}
                  </td>
                  <td>{t.attempt}</td>
                  <td>
                    {t.runId ? (
                      <a href={href.run(t.runId)} aria-label={`Run of task ${t.key}`}>
                        {t.runId}
                      </a>
                    ) : (
                      '—'
                    )}
                  </td>
                  {canOperate ? (
                    <td>
                      {t.status === 'failed' ? (
                        <button type="button" disabled={busy} onClick={() => act(() => api.retryTask(projectId, t.key), (p) => `Task ${t.key} retried; the project is now ${status(p)}.`)}>
                          Retry {t.key}
                        </button>
                      ) : null}
                    </td>
                  ) : null}
                </tr>
              ))}
            </Table>
          </section>
        </>
      ) : null}
    </>
  );
}
