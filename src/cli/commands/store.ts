import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../config/config';
import { openStorage, type Storage } from '../../storage/storage';
import { copyStore, DEFAULT_COPY_BATCH, TargetHoldsOtherDataError, type CopyProgress, type StoreCopyReport } from '../../storage/store-copy';
import { describeTarget, eraseTarget, openTarget, parseStoreUrl, sameStore, type StoreTarget } from '../../storage/store-target';
import type { CliContext } from '../cli-context';
import { CliError, EXIT } from '../exit-codes';
import { int } from '../options';

/** Progress lines at most this often (and at the end of each phase). */
const PROGRESS_EVERY_MS = 1000;

/** `triad store copy --to <url>`: the configured store copied into another, resumably, then verified. */
export function addStoreCommands(program: Command, { output, print }: CliContext): void {
  const store = program.command('store').description('the configured store as a whole: copy it into another');
  store
    .command('copy')
    .description('copy every event (ids, order, metadata, times), decision record, run checkpoint and key into another store, then verify the copy')
    .requiredOption('--to <url>', 'sqlite:<data dir> | postgres://…[?schema=name] | esdb://… (an empty EventStoreDB database)')
    .option('--force', 'when the target holds other data, erase it first (SQLite: its triad.db; PostgreSQL: its schema, never public)')
    .option('--batch <n>', 'events per transaction', int('--batch', 1, 10_000), DEFAULT_COPY_BATCH)
    .option('--quiet', 'no progress lines on stderr')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { to: string; force?: boolean; batch: number; quiet?: boolean; json?: boolean }) => {
      const config = loadConfig();
      const target = parseStoreUrl(opts.to);
      if (sameStore(config, target)) throw new CliError(`the target is the configured store itself (${describeTarget(target)})`, EXIT.usage);
      if (config.store === 'sqlite' && !existsSync(join(config.dataDir, 'triad.db'))) {
        throw new CliError(`no store to copy: ${join(config.dataDir, 'triad.db')} does not exist (TRIAD_DATA_DIR)`, EXIT.notFound);
      }
      const progress = opts.quiet || opts.json ? undefined : progressPrinter((line) => output.err(line));
      const source = await opened(`the ${config.store} store`, () => openStorage(config, { pgSchema: config.pgSchema, pgPoolSize: 4 }));
      let report: StoreCopyReport;
      try {
        report = await copyInto(source, target, { force: opts.force === true, batch: opts.batch, progress });
      } finally {
        // The copy's report (or its error) is what the operator needs; the source is only read.
        await source.close().catch(() => undefined);
      }
      const v = report.verification;
      print(opts.json === true, { target: describeTarget(target), ...report }, () =>
        v.ok
          ? `copied ${report.events.copied} event(s) (${report.events.alreadyInTarget} already there), ${report.decisionRecords.copied} decision record(s), ` +
            `${report.runCheckpoints.copied} run checkpoint(s) to ${describeTarget(target)} — verified: ${v.target.events} events in ${v.target.streams} streams ` +
            `(${v.target.runs} runs, ${v.target.projects} projects, ${v.target.blobs} workspace blobs, ${v.target.apiKeyEvents} API key events), sha256 ${v.target.hash.slice(0, 16)}…, decision log intact (${v.decisionLog.records} records)`
          : `copy to ${describeTarget(target)} NOT verified: ${v.difference ?? `decision log: ${v.decisionLog.detail ?? 'not intact'}`}`,
      );
      process.exitCode = v.ok ? EXIT.ok : EXIT.failed;
    });
}

async function copyInto(
  source: Storage,
  target: StoreTarget,
  opts: { force: boolean; batch: number; progress?: (p: CopyProgress) => void },
): Promise<StoreCopyReport> {
  const what = `the target ${describeTarget(target)}`;
  let storage = await opened(what, () => openTarget(target, { pgPoolSize: 4 }));
  try {
    try {
      return await copyStore(source, storage, { batchEvents: opts.batch, onProgress: opts.progress });
    } catch (err) {
      if (!(err instanceof TargetHoldsOtherDataError)) throw err;
      if (!opts.force) throw new TargetHoldsOtherDataError(`${err.message}; nothing was written (--force erases the target and copies from scratch)`);
    }
    await storage.close();
    await eraseTarget(target);
    storage = await opened(what, () => openTarget(target, { pgPoolSize: 4 }));
    return await copyStore(source, storage, { batchEvents: opts.batch, onProgress: opts.progress });
  } finally {
    // The copy's report (or its error) is what the operator needs: its appends have all answered by now, so a close that fails loses none of them.
    await storage.close().catch(() => undefined);
  }
}

/** A store that cannot be opened: configuration (esdb not built in, say) exits 2, anything else 1; one line. */
async function opened(what: string, open: () => Promise<Storage>): Promise<Storage> {
  try {
    return await open();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`cannot open ${what}: ${err.message}`, EXIT.usage);
    const e = err as { detail?: unknown; message?: unknown };
    const why = typeof e.detail === 'string' ? e.detail : String(e.message ?? err);
    throw new CliError(`cannot open ${what}: ${why.split('\n')[0]}`, EXIT.failed);
  }
}

/** One stderr line per phase step, at most once a second, and the last of each phase. */
function progressPrinter(write: (line: string) => void): (p: CopyProgress) => void {
  let last = 0;
  let phase: CopyProgress['phase'] | undefined;
  let pending: CopyProgress | undefined;
  const line = (p: CopyProgress) => {
    const pct = p.total > 0 ? ` (${Math.floor((p.done * 100) / p.total)}%)` : '';
    write(`store copy: ${p.phase} ${p.done}/${p.total}${pct}\n`);
    last = Date.now();
    pending = undefined;
  };
  return (p) => {
    if (phase !== p.phase && pending) line(pending);
    phase = p.phase;
    if (Date.now() - last >= PROGRESS_EVERY_MS || p.done >= p.total) line(p);
    else pending = p;
  };
}
