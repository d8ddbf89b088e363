import { useEffect, useState } from 'preact/hooks';
import { api, type LaunchRunInput, type RoleName, type RunStatus, type RunSummary } from '../api';
import { href, navigate } from '../router';
import { useMay } from '../session';
import { ErrorNote, fmtInt, fmtTime, fmtUsd, StatusBadge, Table } from '../ui';

const STATUSES: RunStatus[] = ['queued', 'planning', 'executing', 'reviewing', 'awaiting_review', 'awaiting_approval', 'completed', 'failed', 'blocked', 'cancelled', 'suspended'];
const ROLES: RoleName[] = ['architect', 'executor', 'reviewer'];
/** The list is read again this often while the page is open (there is no stream of every run). */
const REFRESH_MS = 2000;

export function RunsPage() {
  const canLaunch = useMay('operateRuns');
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    let stopped = false;
    let timer: number | undefined;
    const load = async () => {
      try {
        const page = await api.runs(status || undefined);
        if (!stopped) {
          setRuns(page.runs);
          setError(null);
        }
      } catch (err) {
        if (!stopped) setError(err);
      }
      if (!stopped) timer = window.setTimeout(load, REFRESH_MS);
    };
    load();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [status]);

  return (
    <>
      <h1>Runs</h1>
      {canLaunch ? <LaunchForm /> : null}
      <section aria-labelledby="runs-heading">
        <h2 id="runs-heading">All runs</h2>
        <div class="toolbar">
          <label for="status-filter">Status</label>
          <select id="status-filter" value={status} onChange={(e) => setStatus(e.currentTarget.value as RunStatus | '')}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace(/_/g, ' ')}
              </option>
            ))}
          </select>
          <span class="hint" aria-live="polite">
            {runs ? `${runs.length} run${runs.length === 1 ? '' : 's'}, updated live` : 'Loading…'}
          </span>
        </div>
        <ErrorNote error={error} />
        {runs && runs.length === 0 ? <p>No runs{status ? ` with status ${status.replace(/_/g, ' ')}` : ''}.</p> : null}
        {runs && runs.length > 0 ? (
          <Table label="Runs" columns={['Goal', 'Status', 'Iteration', 'Tokens', 'Cost', 'Launched']}>
            {runs.map((r) => (
              <tr key={r.runId}>
                <td>
                  <a href={href.run(r.runId)}>{r.goal}</a>
                  <div class="mono small">{r.runId}</div>
                </td>
                <td>
                  <StatusBadge status={r.status} />
                  {r.terminationReason ? <div class="small">{r.terminationReason}</div> : null}
                </td>
                <td>
                  {r.iteration} / {r.maxIterations}
                </td>
                <td>{fmtInt(r.usage.inputTokens + r.usage.outputTokens)}</td>
                <td>{fmtUsd(r.usage.costUsd)}</td>
                <td>
                  {fmtTime(r.startedAt)}
                  <div class="small">{r.launchedBy}</div>
                </td>
              </tr>
            ))}
          </Table>
        ) : null}
      </section>
    </>
  );
}

function optionalInt(text: string): number | undefined {
  const t = text.trim();
  return t === '' ? undefined : Number(t);
}

function LaunchForm() {
  const [goal, setGoal] = useState('');
  const [criteria, setCriteria] = useState('');
  const [maxIterations, setMaxIterations] = useState('3');
  const [timeoutMin, setTimeoutMin] = useState('30');
  const [totalTokens, setTotalTokens] = useState('500000');
  const [team, setTeam] = useState<Record<RoleName, { model: string; maxTurns: string }>>({
    architect: { model: '', maxTurns: '' },
    executor: { model: '', maxTurns: '' },
    reviewer: { model: '', maxTurns: '' },
  });
  const [humanGate, setHumanGate] = useState(true);
  const [allowLauncher, setAllowLauncher] = useState(false);
  const [reviewTimeout, setReviewTimeout] = useState<'wait' | 'auto_approve' | 'auto_deny' | 'escalate'>('wait');
  const [reviewAfterMin, setReviewAfterMin] = useState('60');
  const [threshold, setThreshold] = useState<'high' | 'none'>('high');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const roles: LaunchRunInput['team'] = {};
    for (const role of ROLES) {
      const t = team[role];
      const cfg: { model?: string; maxTurns?: number } = {};
      if (t.model.trim()) cfg.model = t.model.trim();
      if (t.maxTurns.trim()) cfg.maxTurns = Number(t.maxTurns);
      if (Object.keys(cfg).length > 0) (roles as Record<string, unknown>)[role] = cfg;
    }
    const input: LaunchRunInput = {
      goal,
      acceptanceCriteria: criteria.split('\n').map((c) => c.trim()).filter(Boolean),
      ...(Object.keys(roles ?? {}).length > 0 ? { team: roles } : {}),
      maxIterations: optionalInt(maxIterations),
      timeoutMs: timeoutMin.trim() === '' ? undefined : Math.round(Number(timeoutMin) * 60_000),
      budget: totalTokens.trim() === '' ? undefined : { totalTokens: Number(totalTokens) },
      reviewPolicy: {
        humanGate,
        allowLauncherToReview: allowLauncher,
        timeout: reviewTimeout === 'wait' ? { policy: 'wait' } : { policy: reviewTimeout, afterMs: Math.round(Number(reviewAfterMin) * 60_000) },
      },
      toolApproval: { threshold },
    } as LaunchRunInput;
    try {
      const accepted = await api.launch(input);
      navigate(href.run(accepted.runId));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="launch-heading" class="card">
      <h2 id="launch-heading">Launch a run</h2>
      <form onSubmit={submit} aria-label="Launch a run">
        <label for="goal">Goal</label>
        <textarea id="goal" required rows={2} value={goal} onInput={(e) => setGoal(e.currentTarget.value)} />
        <label for="criteria">Acceptance criteria (one per line)</label>
        <textarea id="criteria" required rows={3} value={criteria} onInput={(e) => setCriteria(e.currentTarget.value)} />
        <details>
          <summary>Team, budget and policies</summary>
          <div class="grid">
            <div>
              <label for="max-iterations">Max iterations</label>
              <input id="max-iterations" type="number" min={1} max={50} value={maxIterations} onInput={(e) => setMaxIterations(e.currentTarget.value)} />
            </div>
            <div>
              <label for="timeout-min">Timeout (minutes)</label>
              <input id="timeout-min" type="number" min={1} value={timeoutMin} onInput={(e) => setTimeoutMin(e.currentTarget.value)} />
            </div>
            <div>
              <label for="budget-total">Token budget (total)</label>
              <input id="budget-total" type="number" min={1} value={totalTokens} onInput={(e) => setTotalTokens(e.currentTarget.value)} />
            </div>
          </div>
          <fieldset>
            <legend>Team settings (empty: the defaults)</legend>
            <div class="grid">
              {ROLES.map((role) => (
                <div key={role} class="role-config">
                  <label for={`model-${role}`}>{role} model</label>
                  <input id={`model-${role}`} value={team[role].model} onInput={(e) => setTeam({ ...team, [role]: { ...team[role], model: e.currentTarget.value } })} />
                  <label for={`turns-${role}`}>{role} max turns</label>
                  <input id={`turns-${role}`} type="number" min={1} max={1000} value={team[role].maxTurns} onInput={(e) => setTeam({ ...team, [role]: { ...team[role], maxTurns: e.currentTarget.value } })} />
                </div>
              ))}
            </div>
          </fieldset>
          <fieldset>
            <legend>Review policy</legend>
            <label class="check">
              <input type="checkbox" checked={humanGate} onChange={(e) => setHumanGate(e.currentTarget.checked)} /> Human review gate
            </label>
            <label class="check">
              <input type="checkbox" checked={allowLauncher} onChange={(e) => setAllowLauncher(e.currentTarget.checked)} /> Launcher may review
            </label>
            <div class="grid">
              <div>
                <label for="review-timeout">Review timeout policy</label>
                <select id="review-timeout" value={reviewTimeout} onChange={(e) => setReviewTimeout(e.currentTarget.value as typeof reviewTimeout)}>
                  <option value="wait">wait for a human</option>
                  <option value="auto_approve">approve after</option>
                  <option value="auto_deny">reject after</option>
                  <option value="escalate">escalate after</option>
                </select>
              </div>
              {reviewTimeout !== 'wait' ? (
                <div>
                  <label for="review-after">After (minutes)</label>
                  <input id="review-after" type="number" min={1} value={reviewAfterMin} onInput={(e) => setReviewAfterMin(e.currentTarget.value)} />
                </div>
              ) : null}
              <div>
                <label for="approval-threshold">Risky tool calls</label>
                <select id="approval-threshold" value={threshold} onChange={(e) => setThreshold(e.currentTarget.value as 'high' | 'none')}>
                  <option value="high">wait for approval (run_command)</option>
                  <option value="none">run without approval</option>
                </select>
              </div>
            </div>
          </fieldset>
        </details>
        <button type="submit" disabled={busy}>
          Launch
        </button>
        <ErrorNote error={error} />
      </form>
    </section>
  );
}
