import { Inject, Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { PersonalKey, RegisteredPersonalKey } from '../../attestation/personal-signature';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { RegisterPublicKeyCommand } from '../keys/add-api-key.command';
import { API_KEYS_STREAM, foldApiKeys } from '../keys/api-key-events';
import { normaliseName } from '../names';
import type { PersonalKeys } from './personal-keys.port';

/**
 * Personal keys on the `apikeys` stream: the keys of a name folded from it (attested events only,
 * as every fold of it), and registration through RegisterPublicKeyCommand.
 */
@Injectable()
export class StorePersonalKeys implements PersonalKeys {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly commands: CommandBus,
  ) {}

  async keysOf(name: string): Promise<RegisteredPersonalKey[]> {
    const n = normaliseName(name);
    return foldApiKeys(await this.store.readStream(API_KEYS_STREAM)).publicKeys.filter((k) => k.name === n);
  }

  async register(name: string, key: PersonalKey, registeredBy: string): Promise<void> {
    // Enrolled by the signed-in holder of the name (the enrolment route registers for the caller only).
    await this.commands.execute(new RegisterPublicKeyCommand(name, key, registeredBy, registeredBy === `user:${normaliseName(name)}`));
  }
}
