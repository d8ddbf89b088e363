import { Option, type Command } from 'commander';
import { createWriteStream, openSync } from 'node:fs';
import { writeExport } from '../../review-gate/decision-log/decision-export';
import { InvalidDecisionFilterError, parseDecisionFilter } from '../../review-gate/decision-log/decision-filter';
import { SINCE_HASH } from '../../review-gate/decision-log/decision-log';
import { DecisionLogService } from '../../review-gate/decision-log/decision-log.providers';
import { DECISION_KINDS, DECISION_OUTCOMES } from '../../review-gate/decision-log/decision-record';
import { describeVerification } from '../../review-gate/decision-log/describe-verification';
import type { CliContext } from '../cli-context';
import { CliError, EXIT } from '../exit-codes';
import { int } from '../options';

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
    .description('check the hash chain against the event store; exit 1 when a record was altered, removed, reordered or inserted')
    .option('--since <hash>', 'also prove the log still extends this head (the hash `decisions head` gave earlier)')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      if (opts.since !== undefined && !SINCE_HASH.test(opts.since)) throw new CliError('--since must be a record hash: 64 lowercase hex characters', EXIT.usage);
      process.exitCode = await withApp(async (app) => {
        const result = await app.get(DecisionLogService).verify({ since: opts.since });
        print(opts.json, result, () => describeVerification(result));
        return result.ok ? EXIT.ok : EXIT.failed;
      });
    });
  decisions
    .command('head')
    .description('seq and hash of the last record: keep the hash to prove later (verify --since) that no record was removed')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withApp(async (app) => {
        const head = await app.get(DecisionLogService).head();
        print(opts.json, head, () => `${head.seq} ${head.hash}`);
      });
    });
  withDecisionFilters(decisions.command('export').description('every decision as NDJSON (default) or CSV'))
    .addOption(new Option('--format <format>', 'ndjson | csv').choices(['ndjson', 'csv']).default('ndjson'))
    .option('--out <file>', 'write to this file (default: stdout)')
    .action(async (opts) => {
      const filter = decisionFilter(opts);
      await withApp(async (app) => {
        const records = await app.get(DecisionLogService).export(filter);
        if (!opts.out) {
          await writeExport(records, opts.format, output.io.stdout);
          return;
        }
        // Opened here so a bad path fails at once, with its error.
        const file = createWriteStream('', { fd: openSync(opts.out, 'w') });
        const closed = new Promise<void>((resolve, reject) => file.once('close', resolve).once('error', reject));
        closed.catch(() => undefined);
        const n = await writeExport(records, opts.format, file);
        file.end();
        await closed;
        output.err(`${n} decision(s) written to ${opts.out}\n`);
      });
    });
}
