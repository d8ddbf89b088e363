import { Inject, Injectable } from '@nestjs/common';
import { decisionTrust } from '../../attestation/decision-trust';
import type { PersonalKey, RegisteredPersonalKey } from '../../attestation/personal-signature';
import type { CommandPath, StreamModel } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import { API_KEYS_STREAM } from '../keys/api-key-events';
import { normaliseName } from '../names';
import type { PersonalKeys } from './personal-keys.port';

type KeyEvent =
  | { type: 'PublicKeyRegistered'; data: { name: string; key: PersonalKey; registeredBy: string; at: string } }
  | { type: 'PublicKeyRevoked'; data: { name: string; keyId: string; revokedBy: string; reason: string; at: string } };

interface State {
  revision: number;
  keys: RegisteredPersonalKey[];
}

function evolve(state: State, e: { type: string; data: unknown; revision: number; position?: number }): State {
  state.revision = e.revision;
  // Only attested key events count: a store writer cannot add a signer.
  if ((e.type !== 'PublicKeyRegistered' && e.type !== 'PublicKeyRevoked') || decisionTrust().refusal(e.type, e.data, e.position ?? 0) !== undefined) return state;
  const event = e as unknown as KeyEvent;
  if (event.type === 'PublicKeyRegistered') {
    const name = normaliseName(event.data.name);
    if (!state.keys.some((k) => k.key.keyId === event.data.key.keyId && k.revokedFrom === undefined)) state.keys.push({ name, key: event.data.key });
  } else {
    for (const k of state.keys) if (k.key.keyId === event.data.keyId && k.name === normaliseName(event.data.name)) k.revokedFrom ??= e.position ?? 0;
  }
  return state;
}

/**
 * The `apikeys` stream's personal keys: `PublicKeyRegistered` appended through the command path
 * (attested there like every key event), the keys of a name folded from the stream.
 */
@Injectable()
export class StreamPersonalKeys implements PersonalKeys {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async keysOf(name: string): Promise<RegisteredPersonalKey[]> {
    const state = await this.load();
    const n = normaliseName(name);
    return state.keys.filter((k) => k.name === n);
  }

  async register(name: string, key: PersonalKey, registeredBy: string): Promise<void> {
    const model: StreamModel<State, KeyEvent> = { streamId: API_KEYS_STREAM, load: () => this.load(), initial: () => ({ revision: -1, keys: [] }), evolve };
    const at = new Date(this.clock.now()).toISOString();
    await this.path.handle(
      model,
      (state): KeyEvent[] => (state.keys.some((k) => k.key.keyId === key.keyId && k.revokedFrom === undefined) ? [] : [{ type: 'PublicKeyRegistered', data: { name: normaliseName(name), key, registeredBy, at } }]),
      { correlationId: `publickey-${normaliseName(name)}`, actor: registeredBy },
    );
  }

  private async load(): Promise<State> {
    const state: State = { revision: -1, keys: [] };
    for (const e of await this.path.store.readStream(API_KEYS_STREAM)) evolve(state, e);
    return state;
  }
}
