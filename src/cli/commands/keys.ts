import { CommandBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { AddApiKeyCommand, RevokePublicKeyCommand, type AddedApiKey } from '../../auth/keys/add-api-key.command';
import { readFileSync } from 'node:fs';
import type { PersonalKey } from '../../attestation/personal-signature';
import { sshLineFingerprint } from '../../attestation/ssh-signature';
import { CliError, EXIT } from '../exit-codes';
import { API_KEYS_STREAM, foldApiKeys, parseKeyRoles, validateKeyName } from '../../auth/keys/api-key-events';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import type { CliContext } from '../cli-context';
import { cliIdentity } from '../options';

/** `triad keys add|list`: API keys kept in the event store. */
export function addKeysCommands(program: Command, { withApp, print }: CliContext): void {
  const keys = program.command('keys').description('API keys kept in the event store (only their sha256 is stored)');
  keys
    .command('add')
    .description('add a key (or replace the stored key of that name) and print its secret once')
    .argument('<name>', 'the key holder: requests with it act as user:<name>')
    .requiredOption('--roles <roles>', 'operator, reviewer, auditor, admin, joined by + or ,')
    .option('--public-key <file>', "register the holder's SSH public key (a .pub file) to sign their own decisions; repeatable", collect, [])
    .option('--as <user>', 'record as added by this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts) => {
      const addedBy = cliIdentity(opts.as).id;
      validateKeyName(name);
      const roles = parseKeyRoles(opts.roles);
      const publicKeys = (opts.publicKey as string[]).map(sshPublicKeyFile);
      await withApp(async (app) => {
        const added = await app.get(CommandBus).execute<AddApiKeyCommand, AddedApiKey>(new AddApiKeyCommand(name, roles, addedBy, publicKeys));
        print(opts.json, { ...added, publicKeys: publicKeys.map((k) => k.keyId) }, () =>
          [`${added.replaced ? 'replaced' : 'added'} key '${added.name}' (${added.roles.join('+')})`, ...publicKeys.map((k) => `public key ${k.keyId} registered`), `secret (shown only now): ${added.secret}`].join('\n'),
        );
      });
    });
  keys
    .command('revoke-public-key')
    .description("revoke a person's registered public key: their signatures with it on later decisions fail verification")
    .argument('<name>')
    .argument('<keyId>', 'the key id `keys list` shows (SHA256:… for an SSH key, the credential id of a passkey)')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--as <user>', 'record as revoked by this user (default: TRIAD_USER or the OS account)')
    .action(async (name: string, keyId: string, opts) => {
      const by = cliIdentity(opts.as).id;
      await withApp(async (app) => {
        await app.get(CommandBus).execute(new RevokePublicKeyCommand(name, keyId, by, opts.reason));
        print(false, {}, () => `revoked ${keyId} of ${name}`);
      });
    });
  keys
    .command('list')
    .description('stored keys: names and roles, never secrets')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const state = foldApiKeys(await app.get<EventStore>(EVENT_STORE).readStream(API_KEYS_STREAM));
        const keysOf = (name: string) => state.publicKeys.filter((k) => k.name === name).map((k) => ({ type: k.key.type, keyId: k.key.keyId, ...(k.revokedFrom !== undefined ? { revoked: true } : {}) }));
        const list = [...state.keys.values()].map(({ name, roles, addedBy, at }) => ({ name, roles, addedBy, at, publicKeys: keysOf(name) }));
        print(opts.json, list, () =>
          list.length === 0
            ? 'no stored keys'
            : list
                .map((k) => [`${k.name}  ${k.roles.join('+')}  added by ${k.addedBy} at ${k.at}`, ...k.publicKeys.map((p) => `  ${p.type} ${p.keyId}${p.revoked ? ' (revoked)' : ''}`)].join('\n'))
                .join('\n'),
        );
      });
    });
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** An SSH public key from its .pub file, as registered: its line and fingerprint. */
function sshPublicKeyFile(file: string): PersonalKey {
  let line: string;
  try {
    line = readFileSync(file, 'utf8').trim().split('\n')[0] ?? '';
  } catch (err) {
    throw new CliError(`cannot read --public-key ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.usage);
  }
  const keyId = sshLineFingerprint(line);
  if (!keyId) throw new CliError(`--public-key ${file} is not an SSH public key triad reads (ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa, one line of a .pub file)`, EXIT.usage);
  const [type, blob] = line.split(/\s+/);
  return { type: 'ssh', keyId, publicKey: `${type} ${blob}` };
}
