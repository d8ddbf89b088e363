import { useState } from 'preact/hooks';
import { browserSupportsWebAuthn } from '@simplewebauthn/browser';
import { api } from '../api';
import { enrolPasskey, usablePasskeys } from '../passkeys';
import { useFreshRead } from '../use-fresh-read';
import { ErrorNote, Notice, Table } from '../ui';

/** The signed-in person's passkeys, with which they sign their own decisions; enrolling one. */
export function PasskeysPage() {
  const { value, error, refresh } = useFreshRead(() => api.passkeys(), []);
  const [busy, setBusy] = useState(false);
  const [enrolError, setEnrolError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const supported = browserSupportsWebAuthn();
  const enrol = async () => {
    setBusy(true);
    setEnrolError(null);
    setDone(null);
    try {
      const key = await enrolPasskey();
      setDone(`Passkey ${key.keyId.slice(0, 12)}… enrolled for ${key.rpId}.`);
      refresh();
    } catch (err) {
      setEnrolError(err);
    } finally {
      setBusy(false);
    }
  };
  const keys = value?.passkeys ?? [];
  const usable = new Set(usablePasskeys(keys).map((k) => k.keyId));
  return (
    <>
      <h1>Passkeys</h1>
      <p class="hint">
        A passkey signs your own decisions at the review gate: the signature covers the review, its run, iteration and artifact hash, your outcome and your reason, so no one else — the
        server included — can make it for you.
      </p>
      {done ? <Notice>{done}</Notice> : null}
      <ErrorNote error={error} />
      {value && keys.length === 0 ? <p>You have no passkey yet.</p> : null}
      {keys.length > 0 ? (
        <Table label="Your passkeys" columns={['Credential', 'For', 'Origins', 'Transports', 'State']}>
          {keys.map((k) => (
            <tr key={k.keyId}>
              <td class="mono small">{k.keyId}</td>
              <td>{k.rpId}</td>
              <td class="small">{k.origins.join(', ')}</td>
              <td class="small">{k.transports?.join(', ') ?? '—'}</td>
              <td>{k.revoked ? 'revoked' : usable.has(k.keyId) ? 'usable here' : 'for another address'}</td>
            </tr>
          ))}
        </Table>
      ) : null}
      {supported ? (
        <button type="button" onClick={enrol} disabled={busy}>
          Enrol a passkey
        </button>
      ) : (
        <p role="alert" class="error">
          This browser has no WebAuthn: passkeys cannot be enrolled here.
        </p>
      )}
      <ErrorNote error={enrolError} />
    </>
  );
}
