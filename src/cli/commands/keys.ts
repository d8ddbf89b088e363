import { CommandBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { AddApiKeyCommand, type AddedApiKey } from '../../auth/keys/add-api-key.command';
import { API_KEYS_STREAM, foldApiKeys, parseKeyRoles, validateKeyName } from '../../auth/keys/api-key-events';
import { EVENT_STORE, type EventStore } from '../../events/event-store.port';
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
    .option('--as <user>', 'record as added by this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts) => {
      const addedBy = cliIdentity(opts.as).id;
      validateKeyName(name);
      const roles = parseKeyRoles(opts.roles);
      await withApp(async (app) => {
        const added = await app.get(CommandBus).execute<AddApiKeyCommand, AddedApiKey>(new AddApiKeyCommand(name, roles, addedBy));
        print(opts.json, added, () =>
          `${added.replaced ? 'replaced' : 'added'} key '${added.name}' (${added.roles.join('+')})\nsecret (shown only now): ${added.secret}`,
        );
      });
    });
  keys
    .command('list')
    .description('stored keys: names and roles, never secrets')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const state = foldApiKeys(await app.get<EventStore>(EVENT_STORE).readStream(API_KEYS_STREAM));
        const list = [...state.keys.values()].map(({ name, roles, addedBy, at }) => ({ name, roles, addedBy, at }));
        print(opts.json, list, () => (list.length === 0 ? 'no stored keys' : list.map((k) => `${k.name}  ${k.roles.join('+')}  added by ${k.addedBy} at ${k.at}`).join('\n')));
      });
    });
}
