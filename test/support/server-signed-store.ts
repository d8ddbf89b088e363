import { attestInPlace } from '../../src/attestation/signing';
import { loadOrCreateSigningKey } from '../../src/attestation/signing-key';
import { signingSettings } from '../../src/config/config';
import { withAppend } from '../../src/events/append-proxy';
import type { EventStore } from '../../src/events/event-store/event-store.port';

/**
 * A store a test writes to as the server would: events of attested types are signed with the
 * server's key file (the one the apps the test starts use: TRIAD_SIGNING_KEY_FILE, else the
 * default under XDG_CONFIG_HOME). For tests that seed a run's history straight into a store a
 * server is serving; a store writer without the key is what test/security attacks with.
 */
export function serverSignedStore(store: EventStore, env: NodeJS.ProcessEnv = process.env, dataDir = '/nonexistent-data-dir'): EventStore {
  const { signer } = loadOrCreateSigningKey(signingSettings(env, dataDir).keyFile);
  return withAppend(store, (streamId, events, options) => {
    attestInPlace(signer, streamId, events, options?.expectedRevision);
    return store.append(streamId, events, options);
  });
}
