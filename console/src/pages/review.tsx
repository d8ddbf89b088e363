import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type PasskeyView, type ReviewIteration, type ReviewView } from '../api';
import { signWithPasskey, usablePasskeys } from '../passkeys';
import { PatchView } from '../patch-view';
import { href } from '../router';
import { ErrorNote, fmtTime, Notice, StatusBadge } from '../ui';
import { useFreshRead } from '../use-fresh-read';

/**
 * One review (`#/reviews/<id>`, GET /v1/reviews/:id): the run, its criteria, the iteration under
 * review with its diff against the iteration before and against the start, who may decide, the
 * decision (a confirmation dialog with the reason: Enter confirms, Escape cancels; `a` and `r`
 * open it from the keyboard), and every earlier iteration's verdict, findings and human feedback.
 * Whoever may not decide sees why, beside buttons that are disabled.
 */
export function ReviewPage({ reviewId }: { reviewId: string }) {
  const [done, setDone] = useState<string | null>(null);
  const { value: view, error, refresh } = useFreshRead(() => api.review(reviewId), [reviewId], { everyMs: 5000 });
  // Read once: whether the person can sign here, and with which keys.
  const { value: passkeys } = useFreshRead(() => api.passkeys(), []);
  if (!view) return error ? <ErrorNote error={error} /> : <p role="status">Loading the review…</p>;
  const current = view.iterations.find((i) => i.iteration === view.iteration);
  const earlier = view.iterations.filter((i) => i.iteration < view.iteration).reverse();
  return (
    <>
      <h1>
        Review of <a href={href.run(view.runId)}>{view.run.goal}</a>
      </h1>
      {done ? <Notice>{done}</Notice> : null}
      <ErrorNote error={error} />
      <dl class="facts">
        <dt>Review</dt>
        <dd class="mono">{view.reviewId}</dd>
        <dt>State</dt>
        <dd>{view.state.replace(/_/g, ' ')}</dd>
        <dt>Iteration</dt>
        <dd>
          {view.iteration} of at most {view.run.maxIterations}
        </dd>
        <dt>Run</dt>
        <dd>
          <StatusBadge status={view.run.status} /> {view.run.terminationReason ?? ''}
        </dd>
        <dt>Launched by</dt>
        <dd>{view.run.launchedBy}</dd>
        <dt>Executor</dt>
        <dd class="mono">{view.executor}</dd>
        <dt>Opened</dt>
        <dd>{fmtTime(view.openedAt)}</dd>
        <dt>Artifact hash</dt>
        <dd class="mono small">{view.artifactHash}</dd>
      </dl>
      <section aria-labelledby="criteria-h">
        <h2 id="criteria-h">Acceptance criteria</h2>
        <ul>
          {view.acceptanceCriteria.map((c, i) => (
            <li key={i}>{c}</li>
          ))}
        </ul>
      </section>
      {current ? <CurrentIteration it={current} /> : null}
      <Decide
        view={view}
        passkeys={usablePasskeys(passkeys?.passkeys ?? [])}
        onDecided={(what) => {
          setDone(what);
          refresh();
        }}
      />
      {earlier.length > 0 ? (
        <section aria-labelledby="history-h">
          <h2 id="history-h">Earlier iterations</h2>
          {earlier.map((it) => (
            <IterationCard key={it.iteration} it={it} />
          ))}
        </section>
      ) : null}
    </>
  );
}

/** How an iteration began, its verdict and findings, and the decisions on its review. */
function IterationFacts({ it }: { it: ReviewIteration }) {
  const s = it.startedBy;
  return (
    <>
      {s.reason === 'human_rejected' ? (
        <p>
          Sent back by {s.by ?? 'a human'} at {fmtTime(s.at)}: <q>{s.feedback}</q>
        </p>
      ) : null}
      {s.reason === 'changes_requested' ? <p>Sent back by the reviewer agent at {fmtTime(s.at)}, with its findings.</p> : null}
      {it.work ? <p class="text">{it.work.summary}</p> : null}
      {it.verdict ? (
        <>
          <p>
            <strong>Reviewer verdict: {it.verdict.verdict}</strong>
          </p>
          <p>{it.verdict.summary}</p>
          {it.verdict.findings.length > 0 ? (
            <ul aria-label={`Findings of iteration ${it.iteration}`}>
              {it.verdict.findings.map((f, i) => (
                <li key={i}>{f}</li>
              ))}
            </ul>
          ) : null}
        </>
      ) : (
        <p>No verdict yet.</p>
      )}
      {it.decisions.map((d, i) => (
        <p key={i}>
          <strong>
            {d.outcome[0].toUpperCase() + d.outcome.slice(1)} by {d.decider}
          </strong>{' '}
          at {fmtTime(d.at)}
          {d.rework === false ? ' (no rework)' : ''}: <q>{d.reason}</q>
        </p>
      ))}
      <p>
        Files changed:{' '}
        {it.diff.previous.changes.length === 0
          ? 'none'
          : it.diff.previous.changes.map((c) => (
              <span key={c.path}>
                <span class="mono">{c.path}</span> <span class={`badge change-${c.change}`}>{c.change}</span>
                {c.omitted ? <span class="small"> (not diffed: {c.omitted}; compare its sha256)</span> : null}{' '}
              </span>
            ))}
      </p>
    </>
  );
}

/** The iteration under review: its facts and its diff, against the iteration before or the start. */
function CurrentIteration({ it }: { it: ReviewIteration }) {
  const hasPrevious = it.diff.previous.fromIteration !== undefined && it.diff.start !== undefined;
  const [against, setAgainst] = useState<'previous' | 'start'>(hasPrevious ? 'previous' : 'start');
  // The diff against the start is the iteration under review's; for a first iteration it is its diff against the iteration before (none).
  const diff = against === 'start' && it.diff.start ? it.diff.start : it.diff.previous;
  const label = against === 'previous' && hasPrevious ? `Diff against iteration ${it.diff.previous.fromIteration}` : 'Diff against the start';
  return (
    <section aria-labelledby="current-h" class="card">
      <h2 id="current-h">Iteration {it.iteration}, under review</h2>
      <IterationFacts it={it} />
      {hasPrevious ? (
        <div role="group" aria-label="Compare with" class="toolbar">
          <button type="button" aria-pressed={against === 'previous'} onClick={() => setAgainst('previous')}>
            Iteration {it.diff.previous.fromIteration}
          </button>
          <button type="button" aria-pressed={against === 'start'} onClick={() => setAgainst('start')}>
            The start
          </button>
        </div>
      ) : null}
      <section aria-label={label}>
        <h3>{label}</h3>
        <PatchView patch={diff.patch} label={`${label}, unified`} />
      </section>
    </section>
  );
}

function IterationCard({ it }: { it: ReviewIteration }) {
  const against = it.diff.previous.fromIteration === undefined ? 'the start' : `iteration ${it.diff.previous.fromIteration}`;
  return (
    <article class="iteration" aria-labelledby={`it-${it.iteration}`}>
      <h3 id={`it-${it.iteration}`}>Iteration {it.iteration}</h3>
      <IterationFacts it={it} />
      <details>
        <summary>Diff against {against}</summary>
        <PatchView patch={it.diff.previous.patch} label={`Diff of iteration ${it.iteration} against ${against}`} />
      </details>
    </article>
  );
}

type Outcome = 'approve' | 'reject';

/** Who may decide, why the caller may not (if not), and the two decisions. */
function Decide({ view, passkeys, onDecided }: { view: ReviewView; passkeys: PasskeyView[]; onDecided: (what: string) => void }) {
  // Each opening is numbered, and a dialog's close clears only its own opening: a key pressed after
  // a dialog hid but before its `close` event (a later task) opens a new dialog that the old
  // close leaves open.
  const [open, setOpenState] = useState<{ outcome: Outcome; n: number } | null>(null);
  const openings = useRef(0);
  const setOpen = (outcome: Outcome) => setOpenState({ outcome, n: ++openings.current });
  const closeOpening = (n: number) => setOpenState((cur) => (cur?.n === n ? null : cur));
  const allowed = view.caller?.mayDecide === true;
  // `a` and `r` open the dialogs, unless the person is typing somewhere or a dialog is open. One
  // listener for the page's life, reading the current state: a key pressed just after a dialog
  // closed must not fall between two listeners.
  const current = useRef(allowed);
  current.current = allowed;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!current.current || document.querySelector('dialog[open]')) return;
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      const target = e.target as HTMLElement | null;
      if (target?.closest('input, textarea, select, [contenteditable="true"]')) return;
      if (e.key === 'a' || e.key === 'r') {
        e.preventDefault();
        setOpen(e.key === 'a' ? 'approve' : 'reject');
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  const launcher = view.deciders.excluded.find((e) => e.rule === 'launcher');
  return (
    <section aria-labelledby="decide-h" class="card">
      <h2 id="decide-h">Decision</h2>
      <p>
        Who may decide: a person with the {view.deciders.roles.join(' or ')} role — not the executor (<span class="mono">{view.executor}</span>), nor an agent in its
        delegation chain{launcher ? <>, nor the person who launched the run ({launcher.identity})</> : null}.
      </p>
      {allowed ? (
        <p class="hint">
          Keyboard: <kbd>a</kbd> approves, <kbd>r</kbd> rejects; each asks for a reason and a confirmation.
        </p>
      ) : (
        <p id="why-not" class="why-not">
          You may not decide this review: {view.caller?.reason ?? 'you are not signed in'}.
        </p>
      )}
      <div class="actions">
        <button type="button" disabled={!allowed} aria-describedby={allowed ? undefined : 'why-not'} onClick={() => setOpen('approve')}>
          Approve
        </button>
        <button type="button" disabled={!allowed} aria-describedby={allowed ? undefined : 'why-not'} onClick={() => setOpen('reject')}>
          Reject
        </button>
      </div>
      {open ? (
        <ConfirmDecision
          key={open.n}
          outcome={open.outcome}
          reviewId={view.reviewId}
          passkeys={passkeys}
          onClose={() => closeOpening(open.n)}
          onDecided={(what) => {
            closeOpening(open.n);
            onDecided(what);
          }}
        />
      ) : null}
    </section>
  );
}

/** The confirmation step: a modal dialog with the reason (and, for a rejection, whether to rework). */
function ConfirmDecision({
  outcome,
  reviewId,
  passkeys,
  onClose,
  onDecided,
}: {
  outcome: Outcome;
  reviewId: string;
  passkeys: PasskeyView[];
  onClose: () => void;
  onDecided: (what: string) => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState('');
  const [rework, setRework] = useState(true);
  const [sign, setSign] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const d = dialog.current!;
    d.showModal();
    // Escape (the dialog's own cancel) and the Cancel button both end here.
    d.addEventListener('close', onClose);
    return () => {
      d.removeEventListener('close', onClose);
      if (d.open) d.close();
    };
  }, []);
  const approve = outcome === 'approve';
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const given = reason.trim();
      let result;
      if (sign) {
        // The statement is the server's, for exactly this outcome and reason; the passkey signs its hash.
        const { statement, challenge } = await api.reviewStatement(reviewId, approve ? 'approved' : 'rejected', given);
        const signature = await signWithPasskey(challenge, passkeys);
        result = approve ? await api.approveReview(reviewId, statement.reason, signature) : await api.rejectReview(reviewId, statement.reason, rework, signature);
      } else result = approve ? await api.approveReview(reviewId, given) : await api.rejectReview(reviewId, given, rework);
      onDecided(`Review ${reviewId} ${result.outcome}${sign ? ' (signed with your passkey)' : ''}; the run is now ${result.runStatus.replace(/_/g, ' ')}.`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="confirm-h">
      <form onSubmit={submit}>
        <h2 id="confirm-h">{approve ? 'Approve' : 'Reject'} this work?</h2>
        <label for="decision-reason">{approve ? 'Reason for approving' : 'Reason for rejecting'}</label>
        <input id="decision-reason" type="text" required maxLength={4000} pattern=".*\S.*" autoFocus value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        {approve ? null : (
          <label class="check">
            <input type="checkbox" checked={rework} onChange={(e) => setRework(e.currentTarget.checked)} /> Send back to the executor for rework
          </label>
        )}
        {passkeys.length > 0 ? (
          <label class="check">
            <input type="checkbox" checked={sign} onChange={(e) => setSign(e.currentTarget.checked)} /> Sign with my passkey
          </label>
        ) : null}
        <p class="hint">Enter confirms, Escape cancels. The reason is kept in the decision log{approve ? '' : ' and sent to the executor'}.</p>
        <div class="actions">
          <button type="submit" disabled={busy}>
            {approve ? 'Confirm approval' : 'Confirm rejection'}
          </button>
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
        <ErrorNote error={error} />
      </form>
    </dialog>
  );
}
