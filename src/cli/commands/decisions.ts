import { Option, type Command } from 'commander';
import { createWriteStream, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { isSignedHead, parseSignedHeadToken, signedHeadToken } from '../../attestation/attestation';
import { verifyBundle, type BundleVerification } from '../../attestation/bundle';
import { webauthnVerifier } from '../../attestation/attestation.module';
import { writeExport } from '../../review-gate/decision-log/decision-export';
import { InvalidDecisionFilterError, parseDecisionFilter } from '../../review-gate/decision-log/decision-filter';
import { SINCE_HASH } from '../../review-gate/decision-log/decision-log';
import { DecisionLogService } from '../../review-gate/decision-log/decision-log.providers';
import { DECISION_KINDS, DECISION_OUTCOMES } from '../../review-gate/decision-log/decision-record';
import { describeVerification } from '../../review-gate/decision-log/describe-verification';
import type { CliContext } from '../cli-context';
import { CliError, EXIT } from '../exit-codes';
import { cliIdentity, int } from '../options';
import { Signing } from '../../attestation/signing';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';

/** `triad decisions list|verify|head|export`: the tamper-evident decision log. */
export function addDecisionsCommands(program: Command, { output, withApp, print }: CliContext): void {
  const decisions = program.command('decisions').description('the tamper-evident decision log: list, verify, export');
  const decisionFilter = (opts: { kind?: string; run?: string; decider?: string; outcome?: string; from?: string; to?: string }) => {
    try {
      return parseDecisionFilter({ kind: opts.kind, runId: opts.run, decider: opts.decider, outcome: opts.outcome, from: opts.from, to: opts.to });
    } catch (err) {
      throw err instanceof InvalidDecisionFilterError ? new CliError(err.message, EXIT.usage) : err;
    }
  };
  const withDecisionFilters = (cmd: Command) =>
    cmd
      .addOption(new Option('--kind <kind>', 'only review decisions or tool approvals').choices(DECISION_KINDS))
      .option('--run <runId>', 'only decisions of this run')
      .option('--decider <identity>', 'only decisions by this decider (user:<name> or system)')
      .addOption(new Option('--outcome <outcome>', 'only this outcome').choices(DECISION_OUTCOMES))
      .option('--from <time>', 'decided at or after (ISO 8601 date or date-time with a zone)')
      .option('--to <time>', 'decided at or before (ISO 8601 date or date-time with a zone)');
  withDecisionFilters(decisions.command('list', { isDefault: true }).description('decisions in log order (seq)'))
    .option('--limit <n>', 'at most this many', int('--limit', 1, 10_000_000), 1000)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const filter = decisionFilter(opts);
      await withApp(async (app) => {
        const list = await app.get(DecisionLogService).list(filter, { limit: opts.limit });
        print(opts.json, list, () =>
          list.length === 0
            ? 'no decisions'
            : list
                .map((d) => `#${d.seq}  ${d.decidedAt}  ${d.outcome.padEnd(9)} ${d.decider.padEnd(20)} ${d.reviewId ?? `${d.approvalId} ${d.toolName}`}  ${d.reason.replace(/\s+/g, ' ').slice(0, 60)}`)
                .join('\n'),
        );
      });
    });
  decisions
    .command('verify')
    .description('check the hash chain against the event store, and every attestation and signature; exit 1 when anything is wrong')
    .option('--since <head>', 'also prove the log still extends this head: the token `decisions head` gave earlier, a bundle exported earlier, or a record hash')
    .option('--bundle <file>', 'verify an exported bundle instead, with no store and no configuration')
    .option('--trust <publicKey>', 'with --bundle: trust this server key (base64, as `decisions keys` prints it); repeatable', collect, [])
    .option('--json', 'print JSON')
    .action(async (opts) => {
      if (opts.bundle !== undefined) {
        process.exitCode = await verifyBundleFile(opts.bundle, opts.since, opts.trust, opts.json, print);
        return;
      }
      if (opts.trust.length > 0) throw new CliError('--trust goes with --bundle (the store is verified against the keys this server trusts)', EXIT.usage);
      const since = opts.since === undefined ? undefined : keptHead(opts.since);
      process.exitCode = await withApp(async (app) => {
        const result = await app.get(DecisionLogService).verify({ since });
        print(opts.json, result, () => describeVerification(result));
        return result.ok ? EXIT.ok : EXIT.failed;
      });
    });
  decisions
    .command('head')
    .description('the last record, signed by this server: keep the token to prove later (verify --since) that nothing was rewritten or removed')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const head = await app.get(DecisionLogService).signedHead();
        print(opts.json, head, () => `${head.seq} ${head.hash}\nsigned by ${head.keyId} at ${head.at}: ${head.token}`);
      });
    });
  const keys = decisions.command('keys').description('the server signing keys: list them, register another server’s key, revoke one');
  keys
    .command('list', { isDefault: true })
    .description("the server signing keys this store knows (this process's own among them), with their public keys")
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const list = await app.get(DecisionLogService).keys();
        print(opts.json, list, () =>
          list.map((k) => `${k.keyId}  ${k.trusted ? 'trusted' : 'NOT trusted here'}${k.revokedFrom !== undefined ? `, revoked from position ${k.revokedFrom}` : ''}  registered by ${k.registeredBy}${k.host ? ` on ${k.host}` : ''} at ${k.at}\n  ${k.publicKey}`).join('\n'),
        );
      });
    });
  keys
    .command('add')
    .description("register another server's public key, attested by this server's key: processes that trust this key then trust it (a second process with its own key, or this server's next key)")
    .argument('<publicKey>', 'base64, as `decisions keys` prints it on the other server')
    .option('--as <user>', 'record as registered by this user (default: TRIAD_USER or the OS account)')
    .action(async (publicKey: string, opts) => {
      const by = cliIdentity(opts.as).id;
      await withApp(async (app) => {
        const keyId = await app.get(Signing).registerKey(app.get<EventStore>(EVENT_STORE), publicKey, by, new Date());
        output.out(`registered ${keyId}\n`);
      });
    });
  keys
    .command('revoke')
    .description('revoke a server key from now on: what it attests after this is revoked_signer (earlier attestations stand)')
    .argument('<keyId>')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--as <user>', 'record as revoked by this user (default: TRIAD_USER or the OS account)')
    .action(async (keyId: string, opts) => {
      const by = cliIdentity(opts.as).id;
      await withApp(async (app) => {
        await app.get(Signing).revokeKey(app.get<EventStore>(EVENT_STORE), keyId, opts.reason, by, new Date());
        output.out(`revoked ${keyId}\n`);
      });
    });
  withDecisionFilters(decisions.command('export').description('every decision as NDJSON (default) or CSV'))
    .addOption(new Option('--format <format>', 'ndjson | csv').choices(['ndjson', 'csv']).default('ndjson'))
    .option('--out <file>', 'write to this file (default: stdout)')
    .option('--bundle <file>', 'write the whole log as a signed, self-contained bundle an auditor verifies anywhere (`decisions verify --bundle`)')
    .action(async (opts) => {
      const filter = decisionFilter(opts);
      if (opts.bundle !== undefined) {
        if (Object.values(filter).some((v) => v !== undefined) || opts.out !== undefined) throw new CliError('--bundle exports the whole log: no filters, no --out', EXIT.usage);
        await withApp(async (app) => {
          const { text, records, head } = await app.get(DecisionLogService).exportBundle();
          try {
            writeFileSync(opts.bundle, text, { flag: 'wx' });
          } catch (err) {
            throw new CliError(`cannot write --bundle ${opts.bundle}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'the file exists' : (err as Error).message}`, EXIT.usage);
          }
          output.err(`${records} decision(s) and their events written to ${opts.bundle}; head ${head.seq} signed by ${head.keyId}\n`);
        });
        return;
      }
      await withApp(async (app) => {
        const records = await app.get(DecisionLogService).export(filter);
        if (!opts.out) {
          await writeExport(records, opts.format, output.io.stdout);
          return;
        }
        // Opened here so a bad path fails at once, with its error.
        const file = createWriteStream('', { fd: openSync(opts.out, 'w') });
        const closed = new Promise<void>((resolve, reject) => file.once('close', resolve).once('error', reject));
        // Not a drop: awaited below; handled now so that a failure before then is not an unhandled rejection.
        closed.catch(() => undefined);
        const n = await writeExport(records, opts.format, file);
        file.end();
        await closed;
        output.err(`${n} decision(s) written to ${opts.out}\n`);
      });
    });
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `decisions verify --bundle`: reads nothing but the file (no store, no configuration, no key). */
async function verifyBundleFile(file: string, since: string | undefined, trust: string[], json: boolean, print: CliContext['print']): Promise<number> {
  const kept = since === undefined ? undefined : keptHead(since);
  const head = kept === undefined ? undefined : parseSignedHeadToken(kept);
  if (kept !== undefined && !head) throw new CliError('with --bundle, --since must be a signed head (a token `triad decisions head` printed, or a bundle exported earlier): a bare hash proves nothing about who signed it', EXIT.usage);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read --bundle ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.usage);
  }
  const result = await verifyBundle(text, { since: head, trust, webauthn: webauthnVerifier });
  print(json, result, () => describeBundle(result));
  return result.ok ? EXIT.ok : EXIT.failed;
}

function describeBundle(r: BundleVerification): string {
  if (r.unreadable) return `bundle NOT verified: ${r.unreadable}`;
  const lines: string[] = [];
  lines.push(r.ok ? `bundle verified: ${r.records} record(s), chain intact, every attestation holds` : 'bundle NOT verified');
  lines.push(r.trust === 'pinned' ? 'trust: pinned (the kept head’s signer or --trust keys)' : 'trust: the bundle’s own keys (consistent; pin a key with --since <signed head> or --trust to prove who signed)');
  if (r.signature !== 'ok') lines.push(`bundle signature: ${r.signature}`);
  if (r.chain && !r.chain.ok) lines.push(`chain: record ${r.chain.firstBadRecord?.seq} ${r.chain.firstBadRecord?.problem}: ${r.chain.firstBadRecord?.detail}`);
  if (r.head?.problem) lines.push(`head ${r.head.seq}: ${r.head.problem}`);
  for (const i of r.attestations?.issues.slice(0, 20) ?? []) lines.push(`${i.type} ${i.id} at position ${i.position}: ${i.of === 'person' ? "the decider's signature " : ''}${i.problem}`);
  if (r.attestations) lines.push(`${r.attestations.checked} attested event(s) checked, ${r.attestations.personallySigned} decision(s) signed by their decider${r.attestations.beforeSigning > 0 ? `, ${r.attestations.beforeSigning} unsigned from before signing began` : ''}`);
  if (r.since) lines.push(r.since.extends ? `the log extends the kept head ${r.since.seq} ${r.since.hash}` : `the log does NOT extend the kept head ${r.since.seq}: ${r.since.detail}`);
  return lines.join('\n');
}

/**
 * A head kept earlier, as `--since` takes it: a record hash, a signed head's token, or a bundle
 * file exported earlier (its signed head). Returned as `verify` takes it: a hash or a token.
 */
function keptHead(value: string): string {
  if (SINCE_HASH.test(value) || parseSignedHeadToken(value)) return value;
  if (existsSync(value)) {
    let head: unknown;
    try {
      head = (JSON.parse(readFileSync(value, 'utf8')) as { head?: unknown }).head;
    } catch {
      head = undefined; // not JSON: said below
    }
    if (isSignedHead(head)) return signedHeadToken(head);
    throw new CliError(`--since ${value} is not a bundle (no signed head in it)`, EXIT.usage);
  }
  throw new CliError('--since must be a signed head (`triad decisions head` prints it), a bundle exported earlier, or a record hash: 64 lowercase hex characters', EXIT.usage);
}
