import { ConflictException, Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { handleCommand } from '../../events/command-handling';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
import { WrongExpectedRevisionError } from '../../events/errors';
import { systemClock } from '../../shared/system';
import type { HumanRole } from '../identity';
import { API_KEYS_STREAM, ApiKeyNameConflictError, decideAddApiKey, foldApiKeys, parseKeyRoles, validateKeyName } from './api-key-events';
import { newApiKeySecret, secretHashOf } from './api-key-secret';

export class AddApiKeyCommand {
  constructor(
    readonly name: string,
    readonly roles: HumanRole[],
    /** `user:<name>` adding the key. */
    readonly addedBy: string,
  ) {}
}

export interface AddedApiKey {
  name: string;
  roles: HumanRole[];
  /** Shown once; only its sha256 is stored. */
  secret: string;
  /** true when the name already had a stored key, which no longer works. */
  replaced: boolean;
}

/** Generates a secret and appends its hash to the `apikeys` stream at the revision read. */
@CommandHandler(AddApiKeyCommand)
export class AddApiKeyHandler implements ICommandHandler<AddApiKeyCommand, AddedApiKey> {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async execute(c: AddApiKeyCommand): Promise<AddedApiKey> {
    // Checked before anything is generated or read, so bad input writes nothing.
    validateKeyName(c.name);
    const roles = parseKeyRoles(c.roles.join('+'));
    const secret = newApiKeySecret();
    const secretHash = secretHashOf(secret);
    // Two concurrent adds: the loser folds the winner's event and decides again.
    for (let attempt = 1; ; attempt++) {
      try {
        const { events } = await handleCommand(
          this.store,
          API_KEYS_STREAM,
          foldApiKeys,
          (state) => decideAddApiKey({ name: c.name, roles, secretHash, addedBy: c.addedBy, at: new Date(systemClock.now()).toISOString() }, state),
          { correlationId: `apikey-${c.name}`, actor: c.addedBy },
        );
        return { name: (events[0].data as { name: string }).name, roles, secret, replaced: events[0].type === 'ApiKeyReplaced' };
      } catch (err) {
        if (err instanceof ApiKeyNameConflictError) throw new ConflictException(err.message);
        if (!(err instanceof WrongExpectedRevisionError) || attempt >= 5) throw err;
      }
    }
  }
}
