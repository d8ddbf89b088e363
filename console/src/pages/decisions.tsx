import { useEffect, useState } from 'preact/hooks';
import { api, type DecisionFilter, type DecisionLogVerification, type DecisionRecord } from '../api';
import { href } from '../router';
import { ErrorNote, fmtTime, Table } from '../ui';

export function DecisionsPage() {
  const [draft, setDraft] = useState<DecisionFilter>({});
  const [filter, setFilter] = useState<DecisionFilter>({});
  const [records, setRecords] = useState<DecisionRecord[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [verification, setVerification] = useState<DecisionLogVerification | null>(null);
  const [verifyError, setVerifyError] = useState<unknown>(null);

  useEffect(() => {
    // Filters changed quickly: only the answer for the filters shown is applied, whatever order the answers come in.
    let current = true;
    api.decisions(filter).then(
      (page) => {
        if (!current) return;
        setRecords(page.decisions);
        setMore(page.nextAfterSeq !== undefined);
        setError(null);
      },
      (err) => current && setError(err),
    );
    return () => {
      current = false;
    };
  }, [filter]);

  const verify = async () => {
    setVerifyError(null);
    setVerification(null);
    try {
      setVerification(await api.verifyDecisions());
    } catch (err) {
      setVerifyError(err);
    }
  };

  const field = (name: keyof DecisionFilter, label: string, type: 'text' | 'date' = 'text', options?: string[]) => (
    <div>
      <label for={`f-${name}`}>{label}</label>
      {options ? (
        <select id={`f-${name}`} value={draft[name] ?? ''} onChange={(e) => setDraft({ ...draft, [name]: e.currentTarget.value || undefined })}>
          <option value="">any</option>
          {options.map((o) => (
            <option key={o} value={o}>
              {o.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      ) : (
        <input id={`f-${name}`} type={type as 'text'} value={draft[name] ?? ''} onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value || undefined })} />
      )}
    </div>
  );

  return (
    <>
      <h1>Decision log</h1>
      <section class="card" aria-labelledby="verify-heading">
        <h2 id="verify-heading">Integrity</h2>
        <button type="button" onClick={verify}>
          Verify the log
        </button>
        {verification ? (
          <div role="status" class={verification.ok ? 'ok' : 'error'}>
            {verification.ok ? <p>The log is intact: {verification.checked} records checked.</p> : <p>The log is NOT intact: {verification.checked} records verified before the first bad one.</p>}
            {verification.firstBadRecord ? (
              <p>
                First bad record: seq {verification.firstBadRecord.seq} ({verification.firstBadRecord.decisionId}) — {verification.firstBadRecord.problem}: {verification.firstBadRecord.detail}
              </p>
            ) : null}
            {verification.streamGaps && verification.streamGaps.length > 0 ? <p>Missing events: {verification.streamGaps.map((g) => `${g.streamId}@${g.missingRevision}`).join(', ')}</p> : null}
          </div>
        ) : null}
        <ErrorNote error={verifyError} />
      </section>
      <section aria-labelledby="filter-heading">
        <h2 id="filter-heading">Records</h2>
        <form
          aria-label="Filter decisions"
          onSubmit={(e) => {
            e.preventDefault();
            setFilter({ ...draft });
          }}
        >
          <div class="grid">
            {field('kind', 'Kind', 'text', ['review', 'tool_approval'])}
            {field('runId', 'Run id')}
            {field('decider', 'Decider (user:<name> or system)')}
            {field('outcome', 'Outcome', 'text', ['approved', 'rejected', 'escalated', 'waived'])}
            {field('from', 'From (date)', 'date')}
            {field('to', 'To (date)', 'date')}
          </div>
          <div class="actions">
            <button type="submit">Apply filters</button>
            <a class="button" href={api.decisionsExportUrl(filter, 'ndjson')} download="decisions.ndjson">
              Export NDJSON
            </a>
            <a class="button" href={api.decisionsExportUrl(filter, 'csv')} download="decisions.csv">
              Export CSV
            </a>
          </div>
        </form>
        <ErrorNote error={error} />
        {records && records.length === 0 ? <p>No decision matches.</p> : null}
        {records && records.length > 0 ? (
          <Table label="Decisions" columns={['Seq', 'Decided', 'Kind', 'Run', 'Decider', 'Outcome', 'Reason', 'Hash']}>
            {records.map((r) => (
              <tr key={r.seq}>
                <td>{r.seq}</td>
                <td>{fmtTime(r.decidedAt)}</td>
                <td>{r.kind === 'tool_approval' ? `tool ${r.toolName ?? ''}` : `review ${r.iteration}`}</td>
                <td>
                  <a class="mono small" href={href.run(r.runId)}>
                    {r.runId}
                  </a>
                </td>
                <td>{r.decider}</td>
                <td>{r.outcome}</td>
                <td>{r.reason}</td>
                <td class="mono small" title={r.hash}>
                  {r.hash.slice(0, 12)}…
                </td>
              </tr>
            ))}
          </Table>
        ) : null}
        {more ? <p class="hint">Showing the first {records?.length} records; narrow the filters or export for all.</p> : null}
      </section>
    </>
  );
}
