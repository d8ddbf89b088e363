import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import type { HumanRole } from '../identity';
import { API_KEYS_STREAM, apiKeysStream, decideAddApiKey, parseKeyRoles, validateKeyName } from './api-key-events';
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
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(c: AddApiKeyCommand): Promise<AddedApiKey> {
    // Checked before anything is generated or read, so bad input writes nothing.
    validateKeyName(c.name);
    const roles = parseKeyRoles(c.roles.join('+'));
    const secret = newApiKeySecret();
    const secretHash = secretHashOf(secret);
    const at = new Date(this.clock.now()).toISOString();
    // Two concurrent adds: the loser folds the winner's event and decides again.
    const { events } = await this.path.handle(
      apiKeysStream(() => this.path.store.readStream(API_KEYS_STREAM)),
      (state) => decideAddApiKey({ name: c.name, roles, secretHash, addedBy: c.addedBy, at }, state),
      { correlationId: `apikey-${c.name}`, actor: c.addedBy },
    );
    return { name: events[0].data.name, roles, secret, replaced: events[0].type === 'ApiKeyReplaced' };
  }
}
