import { useEffect, useState } from 'preact/hooks';
import { api, type ListedWebhook, type WebhookDelivery } from '../api';
import { ErrorNote, fmtTime, StatusBadge, Table } from '../ui';

/** Outbound webhooks, for admins: each endpoint with its last delivery, and one endpoint's delivery log. */
export function WebhooksPage() {
  const [webhooks, setWebhooks] = useState<ListedWebhook[] | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  const [deliveries, setDeliveries] = useState<WebhookDelivery[] | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    api.webhooks().then(
      (r) => setWebhooks(r.webhooks),
      (err) => setError(err),
    );
  }, []);

  useEffect(() => {
    if (!shown) return;
    // Another endpoint chosen meanwhile: only the answer for the one shown is applied.
    let current = true;
    setDeliveries(null);
    api.webhookDeliveries(shown).then(
      (r) => current && setDeliveries(r.deliveries),
      (err) => current && setError(err),
    );
    return () => {
      current = false;
    };
  }, [shown]);

  return (
    <>
      <h1>Webhooks</h1>
      <p class="hint">Endpoints are added with `triad webhooks add` or POST /v1/webhooks; their secrets are shown only then.</p>
      <ErrorNote error={error} />
      {webhooks && webhooks.length === 0 ? <p>No webhooks.</p> : null}
      {webhooks && webhooks.length > 0 ? (
        <Table label="Webhooks" columns={['Endpoint', 'URL', 'Events', 'Last delivery', '']}>
          {webhooks.map((w) => (
            <tr key={w.id}>
              <td class="mono small">{w.id}</td>
              <td class="mono small">{w.url}</td>
              <td>{w.events.join(', ')}</td>
              <td>{w.lastDelivery ? <StatusBadge status={w.lastDelivery.status} /> : 'none yet'}</td>
              <td>
                <button type="button" onClick={() => setShown(w.id)} aria-pressed={shown === w.id}>
                  Deliveries
                </button>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
      {shown && deliveries ? (
        <section aria-labelledby="deliveries-heading">
          <h2 id="deliveries-heading">Deliveries of {shown}</h2>
          {deliveries.length === 0 ? <p>No deliveries yet.</p> : null}
          {deliveries.length > 0 ? (
            <Table label="Deliveries" columns={['Event', 'Webhook id', 'Status', 'Attempts', 'Response', 'Last attempt', 'Next retry']}>
              {deliveries.map((d) => (
                <tr key={d.webhookId}>
                  <td>{d.type}</td>
                  <td class="mono small">{d.webhookId}</td>
                  <td>
                    <StatusBadge status={d.status} />
                  </td>
                  <td>{d.attempts}</td>
                  <td>{d.responseCode ?? d.error ?? '—'}</td>
                  <td>{fmtTime(d.lastAttemptAt)}</td>
                  <td>{fmtTime(d.nextRetryAt)}</td>
                </tr>
              ))}
            </Table>
          ) : null}
        </section>
      ) : null}
    </>
  );
}
