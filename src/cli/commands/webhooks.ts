import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { cliIdentity } from '../options';
import { WebhooksService, type ListedWebhook } from '../../webhooks/webhooks.service';

/** `triad webhooks add|list|remove`: outbound webhooks kept in the store (delivered by `triad serve`). */
export function addWebhooksCommands(program: Command, { withApp, print }: CliContext): void {
  const webhooks = program.command('webhooks').description('outbound webhooks: endpoints told when a review opens, a run ends or a tool call waits');
  webhooks
    .command('add')
    .description("add an endpoint and print its id and its signing secret (shown only now)")
    .argument('<url>', 'http:// or https:// URL the webhooks are POSTed to')
    .requiredOption('--events <list>', 'comma-separated: review.opened, run.ended, approval.requested')
    .option('--allow-private', 'let the URL reach private, loopback and link-local addresses (a receiver on this network)')
    .option('--as <user>', 'record as added by this user (default: TRIAD_USER or the OS account)')
    .option('--json', 'print JSON')
    .action(async (url: string, opts) => {
      const by = cliIdentity(opts.as).id;
      await withApp(async (app) => {
        const added = await app.get(WebhooksService).add({ url, events: String(opts.events).split(','), allowPrivate: opts.allowPrivate === true, by });
        print(opts.json, added, () =>
          [`added webhook ${added.id} → ${added.url} (${added.events.join(', ')})${added.allowPrivate ? ', private addresses allowed' : ''}`, `secret (shown only now): ${added.secret}`].join('\n'),
        );
      });
    });
  webhooks
    .command('list')
    .description('endpoints, their events and their last delivery (never a secret)')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const list = await app.get(WebhooksService).list();
        print(opts.json, list, () => (list.length === 0 ? 'no webhooks' : list.map(line).join('\n')));
      });
    });
  webhooks
    .command('remove')
    .description('remove an endpoint and its delivery log')
    .argument('<id>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts) => {
      await withApp(async (app) => {
        await app.get(WebhooksService).remove(id);
        print(opts.json, { id, removed: true }, () => `removed webhook ${id}`);
      });
    });
}

function line(w: ListedWebhook): string {
  const d = w.lastDelivery;
  const last = d
    ? `last: ${d.type} ${d.status} (${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${d.responseCode !== undefined ? `, HTTP ${d.responseCode}` : ''}) at ${d.lastAttemptAt}${d.nextRetryAt ? `, next retry ${d.nextRetryAt}` : ''}`
    : 'no deliveries yet';
  return `${w.id}  ${w.url}  ${w.events.join(',')}  secret ${w.secretHint}  ${last}`;
}
