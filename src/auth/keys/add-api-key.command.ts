import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { CommandPath } from '../../events/command-handling';
import { COMMAND_PATH } from '../../events/command-path.module';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import type { HumanRole } from '../identity';
import { API_KEYS_STREAM, apiKeysStream, decideAddApiKey, decideRegisterPublicKey, decideRevokePublicKey, parseKeyRoles, validateKeyName } from './api-key-events';
import type { PersonalKey } from '../../attestation/personal-signature';
import { newApiKeySecret, secretHashOf } from './api-key-secret';

export class AddApiKeyCommand {
  constructor(
    readonly name: string,
    readonly roles: HumanRole[],
    /** `user:<name>` adding the key. */
    readonly addedBy: string,
    /** Public keys to register with it (the holder's SSH keys, for signing their own decisions). */
    readonly publicKeys: PersonalKey[] = [],
  ) {}
}

export class RegisterPublicKeyCommand {
  constructor(
    readonly name: string,
    readonly key: PersonalKey,
    readonly registeredBy: string,
    /** The key's holder registers it, signed in with their key (TRIAD_API_KEYS or stored): no stored key needed. */
    readonly byHolder = false,
  ) {}
}

export class RevokePublicKeyCommand {
  constructor(
    readonly name: string,
    readonly keyId: string,
    readonly revokedBy: string,
    readonly reason: string,
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
      (state) => decideAddApiKey({ name: c.name, roles, secretHash, addedBy: c.addedBy, at, publicKeys: c.publicKeys }, state),
      { correlationId: `apikey-${c.name}`, actor: c.addedBy },
    );
    return { name: (events[0].data as { name: string }).name, roles, secret, replaced: events[0].type === 'ApiKeyReplaced' };
  }
}

/** Appends a PublicKeyRegistered (nothing when the key is registered to that name already). */
@CommandHandler(RegisterPublicKeyCommand)
export class RegisterPublicKeyHandler implements ICommandHandler<RegisterPublicKeyCommand, { registered: boolean }> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(c: RegisterPublicKeyCommand): Promise<{ registered: boolean }> {
    const at = new Date(this.clock.now()).toISOString();
    const { events } = await this.path.handle(
      apiKeysStream(() => this.path.store.readStream(API_KEYS_STREAM)),
      (state) => decideRegisterPublicKey({ name: c.name, key: c.key, registeredBy: c.registeredBy, at }, state, c.byHolder),
      { correlationId: `apikey-${c.name}`, actor: c.registeredBy },
    );
    return { registered: events.length > 0 };
  }
}

@CommandHandler(RevokePublicKeyCommand)
export class RevokePublicKeyHandler implements ICommandHandler<RevokePublicKeyCommand, void> {
  constructor(
    @Inject(COMMAND_PATH) private readonly path: CommandPath,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute(c: RevokePublicKeyCommand): Promise<void> {
    const at = new Date(this.clock.now()).toISOString();
    await this.path.handle(
      apiKeysStream(() => this.path.store.readStream(API_KEYS_STREAM)),
      (state) => decideRevokePublicKey({ name: c.name, keyId: c.keyId, revokedBy: c.revokedBy, reason: c.reason, at }, state),
      { correlationId: `apikey-${c.name}`, actor: c.revokedBy },
    );
  }
}
