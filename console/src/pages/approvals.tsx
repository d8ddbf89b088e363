import { useState } from 'preact/hooks';
import { api, type PasskeyView, type PendingApprovalItem } from '../api';
import { signWithPasskey, usablePasskeys } from '../passkeys';
import { useFreshRead } from '../use-fresh-read';
import { href } from '../router';
import { ErrorNote, fmtTime, Json, Notice } from '../ui';

export function ApprovalsPage() {
  const [done, setDone] = useState<string | null>(null);
  const { value, error, refresh: load } = useFreshRead(() => api.approvals(), [], { everyMs: 2000 });
  const { value: passkeys } = useFreshRead(() => api.passkeys(), []);
  const usable = usablePasskeys(passkeys?.passkeys ?? []);
  // Decided here: gone from the list at once, not at the next read (a second click would only be refused).
  const [decided, setDecided] = useState<ReadonlySet<string>>(new Set());
  const approvals = value?.approvals.filter((x) => !decided.has(x.approvalId));
  return (
    <>
      <h1>Tool approvals</h1>
      {done ? <Notice>{done}</Notice> : null}
      <ErrorNote error={error} />
      {approvals && approvals.length === 0 ? <p>No tool call waits for a decision.</p> : null}
      {approvals?.map((a) => (
        <Approval
          key={a.approvalId}
          approval={a}
          passkeys={usable}
          onDecided={(what) => {
            setDone(what);
            setDecided((d) => new Set(d).add(a.approvalId));
            load();
          }}
        />
      ))}
    </>
  );
}

function Approval({ approval: a, passkeys, onDecided }: { approval: PendingApprovalItem; passkeys: PasskeyView[]; onDecided: (what: string) => void }) {
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const decide = async (approve: boolean, withPasskey = false) => {
    if (!approve && reason.trim() === '') {
      setError(new Error('a reason is needed to reject a tool call'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      let r;
      if (withPasskey) {
        // The passkey signs the server's statement of this outcome and reason; the decision sends that statement's reason.
        const { statement, challenge } = await api.approvalStatement(a.approvalId, approve ? 'approved' : 'rejected', reason.trim() || undefined);
        const signature = await signWithPasskey(challenge, passkeys);
        r = approve ? await api.approveToolCall(a.approvalId, statement.reason, signature) : await api.rejectToolCall(a.approvalId, statement.reason, signature);
      } else {
        r = approve ? await api.approveToolCall(a.approvalId, reason.trim() || undefined) : await api.rejectToolCall(a.approvalId, reason);
      }
      onDecided(`Tool call ${a.tool} ${r.outcome}${withPasskey ? ' (signed with your passkey)' : ''}; the run is now ${r.runStatus.replace(/_/g, ' ')}.`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const id = a.approvalId;
  return (
    <article class="card" aria-labelledby={`h-${id}`}>
      <h2 id={`h-${id}`}>
        <span class="mono">{a.tool}</span> waits for approval
      </h2>
      <dl class="facts">
        <dt>Run</dt>
        <dd>
          <a href={href.run(a.runId)}>{a.goal}</a>
        </dd>
        <dt>Risk</dt>
        <dd>
          <span class={`badge risk-${a.risk}`}>{a.risk}</span>
        </dd>
        <dt>Asked by</dt>
        <dd>
          {a.role}, turn {a.turn}
        </dd>
        <dt>Requested</dt>
        <dd>{fmtTime(a.requestedAt)}</dd>
        {a.timeout ? (
          <>
            <dt>Timeout</dt>
            <dd>
              {a.timeout.policy.replace(/_/g, ' ')} at {fmtTime(a.timeout.dueAt)}
            </dd>
          </>
        ) : null}
      </dl>
      <h3>Input</h3>
      <Json value={a.input} label={`Input of ${a.tool}`} />
      <form
        aria-label={`Decide ${id}`}
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <label for={`reason-${id}`}>Reason (required to reject)</label>
        <textarea id={`reason-${id}`} rows={2} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        <div class="actions">
          <button type="button" disabled={busy} onClick={() => decide(true)}>
            Approve call
          </button>
          <button type="button" disabled={busy} onClick={() => decide(false)}>
            Reject call
          </button>
          {passkeys.length > 0 ? (
            <>
              <button type="button" disabled={busy} onClick={() => decide(true, true)}>
                Approve with passkey
              </button>
              <button type="button" disabled={busy} onClick={() => decide(false, true)}>
                Reject with passkey
              </button>
            </>
          ) : null}
        </div>
      </form>
      <ErrorNote error={error} />
    </article>
  );
}
