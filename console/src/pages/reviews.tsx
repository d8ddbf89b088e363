import { useState } from 'preact/hooks';
import { api, type PasskeyView, type PendingReviewItem } from '../api';
import { signWithPasskey, usablePasskeys } from '../passkeys';
import { useFreshRead } from '../use-fresh-read';
import { href } from '../router';
import { ErrorNote, fmtTime, Notice } from '../ui';
import { WorkspaceDiff } from '../workspace-diff';
import { useSession } from '../session';

export function ReviewsPage() {
  const [done, setDone] = useState<string | null>(null);
  const { value, error, refresh: load } = useFreshRead(() => api.reviews(), [], { everyMs: 3000 });
  // Read once: whether the person can sign here, and with which keys.
  const { value: passkeys } = useFreshRead(() => api.passkeys(), []);
  const usable = usablePasskeys(passkeys?.passkeys ?? []);
  // Decided here: gone from the list at once, not at the next read (a second click would only be refused).
  const [decided, setDecided] = useState<ReadonlySet<string>>(new Set());
  const reviews = value?.reviews.filter((x) => !decided.has(x.reviewId));
  return (
    <>
      <h1>Reviews</h1>
      {done ? <Notice>{done}</Notice> : null}
      <ErrorNote error={error} />
      {reviews && reviews.length === 0 ? <p>No review waits for a decision.</p> : null}
      {passkeys && usable.length === 0 && reviews && reviews.length > 0 ? (
        <p class="hint">
          To sign your decisions yourself, <a href={href.passkeys()}>enrol a passkey</a>.
        </p>
      ) : null}
      {reviews?.map((r) => (
        <Review
          key={r.reviewId}
          review={r}
          passkeys={usable}
          onDecided={(what) => {
            setDone(what);
            setDecided((d) => new Set(d).add(r.reviewId));
            load();
          }}
        />
      ))}
    </>
  );
}

function Review({ review, passkeys, onDecided }: { review: PendingReviewItem; passkeys: PasskeyView[]; onDecided: (what: string) => void }) {
  const [approveReason, setApproveReason] = useState('');
  const [rejectReason, setRejectReason] = useState('');
  const [rework, setRework] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const decide = async (f: () => Promise<{ outcome: string; runStatus: string }>, signed = false) => {
    setBusy(true);
    setError(null);
    try {
      const result = await f();
      onDecided(`Review ${review.reviewId} ${result.outcome}${signed ? ' (signed with your passkey)' : ''}; the run is now ${result.runStatus.replace(/_/g, ' ')}.`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const verdict = review.lastVerdict;
  const id = review.reviewId;
  // The launcher of the run may be barred from deciding it (its review policy says): the review's
  // own view tells her whether, and why, before any click — asked only of her, so the list stays one read.
  const me = useSession().identity.id;
  const mine = review.launchedBy === me;
  const { value: own } = useFreshRead(() => (mine ? api.review(id) : Promise.resolve(undefined)), [id, mine]);
  const barred = own?.caller && !own.caller.mayDecide ? own.caller.reason : undefined;
  // The statement is the server's, for exactly this outcome and reason (trimmed, as the decision records it); the passkey signs its hash.
  const signed = (outcome: 'approved' | 'rejected', given: string, send: (reason: string, sig: Awaited<ReturnType<typeof signWithPasskey>>) => Promise<{ outcome: string; runStatus: string }>) => (e: Event) => {
    const form = (e.currentTarget as HTMLButtonElement).form;
    if (form && !form.reportValidity()) return;
    const reason = given.trim();
    void decide(async () => {
      const { statement, challenge } = await api.reviewStatement(id, outcome, reason);
      return send(statement.reason, await signWithPasskey(challenge, passkeys));
    }, true);
  };
  return (
    <article class="card" aria-labelledby={`h-${id}`}>
      <h2 id={`h-${id}`}>
        Review of <a href={href.run(review.runId)}>{review.goal}</a>
      </h2>
      <p>
        <a href={href.review(id)}>Open the whole review</a>: every iteration's verdict, findings and feedback, and the diffs.
      </p>
      <dl class="facts">
        <dt>Review</dt>
        <dd class="mono">{id}</dd>
        <dt>Iteration</dt>
        <dd>{review.iteration}</dd>
        <dt>Launched by</dt>
        <dd>{review.launchedBy}</dd>
        <dt>Executor</dt>
        <dd>{review.executor}</dd>
        <dt>Opened</dt>
        <dd>{fmtTime(review.openedAt)}</dd>
        {review.timeout ? (
          <>
            <dt>Timeout</dt>
            <dd>
              {review.timeout.policy.replace(/_/g, ' ')} at {fmtTime(review.timeout.dueAt)}
              {review.escalated ? ' · escalated' : ''}
            </dd>
          </>
        ) : null}
        <dt>Artifact hash</dt>
        <dd class="mono small">{review.artifactHash}</dd>
      </dl>
      <h3>Acceptance criteria</h3>
      <ul>
        {review.acceptanceCriteria.map((c, i) => (
          <li key={i}>{c}</li>
        ))}
      </ul>
      {verdict ? (
        <>
          <h3>Reviewer verdict: {verdict.verdict}</h3>
          <p>{verdict.summary}</p>
          {verdict.findings.length > 0 ? (
            <ul aria-label="Findings">
              {verdict.findings.map((f, i) => (
                <li key={i}>{f}</li>
              ))}
            </ul>
          ) : null}
        </>
      ) : null}
      <WorkspaceDiff runId={review.runId} iteration={review.iteration} />
      {barred ? (
        <p id={`why-not-${id}`} class="why-not">
          You may not decide this review: {barred}.
        </p>
      ) : null}
      <div class="decide">
        <form
          aria-label={`Approve ${id}`}
          onSubmit={(e) => {
            e.preventDefault();
            decide(() => api.approveReview(id, approveReason));
          }}
        >
          <label for={`approve-${id}`}>Reason for approving</label>
          <textarea id={`approve-${id}`} required rows={2} value={approveReason} onInput={(e) => setApproveReason(e.currentTarget.value)} />
          <button type="submit" disabled={busy || barred !== undefined || (mine && !own)} aria-describedby={barred ? `why-not-${id}` : undefined}>
            Approve
          </button>
          {passkeys.length > 0 ? (
            <button type="button" disabled={busy || barred !== undefined} onClick={signed('approved', approveReason, (reason, sig) => api.approveReview(id, reason, sig))}>
              Approve with passkey
            </button>
          ) : null}
        </form>
        <form
          aria-label={`Reject ${id}`}
          onSubmit={(e) => {
            e.preventDefault();
            decide(() => api.rejectReview(id, rejectReason, rework));
          }}
        >
          <label for={`reject-${id}`}>Reason for rejecting</label>
          <textarea id={`reject-${id}`} required rows={2} value={rejectReason} onInput={(e) => setRejectReason(e.currentTarget.value)} />
          <label class="check">
            <input type="checkbox" checked={rework} onChange={(e) => setRework(e.currentTarget.checked)} /> Send back to the executor for rework
          </label>
          <button type="submit" disabled={busy || barred !== undefined || (mine && !own)} aria-describedby={barred ? `why-not-${id}` : undefined}>
            Reject
          </button>
          {passkeys.length > 0 ? (
            <button type="button" disabled={busy || barred !== undefined} onClick={signed('rejected', rejectReason, (reason, sig) => api.rejectReview(id, reason, rework, sig))}>
              Reject with passkey
            </button>
          ) : null}
        </form>
      </div>
      <ErrorNote error={error} />
    </article>
  );
}
