import { createServer } from 'node:net';
import type { Command } from 'commander';
import { countStoredApiKeys } from '../../auth/keys/count-stored-api-keys';
import { ConfigError, describeConfig, loadConfig, logLevelSetting } from '../../config/config';
import { isStoreUnavailable } from '../../events/errors';
import { createHttpApp } from '../../http/bootstrap';
import { MODEL_PROVIDER, type ModelProvider } from '../../team/models/model.port';
import type { CliContext } from '../cli-context';
import { levelsAt, Redactor } from '../../observability/log-format';
import { startTracingFromEnv } from '../../observability/otel-sdk';
import { CliLogger, packageVersion } from '../cli-io';
import { CliError, EXIT } from '../exit-codes';
import { providerLine } from '../format';
import { SANDBOX } from '../../team/tokens';
import type { Sandbox } from '../../team/tools/sandbox/sandbox';
import { TOOL_REGISTRY } from '../../team/tokens';
import type { ToolRegistry } from '../../team/tools/tool-registry';
import { waitForStore } from '../store-wait';

/** `triad serve`: the HTTP API, until SIGINT or SIGTERM. */
export function addServeCommand(program: Command, { output }: CliContext): void {
  program
    .command('serve')
    .description('serve the HTTP API (TRIAD_HOST:TRIAD_PORT) and drive runs')
    .action(async () => {
      const config = loadConfig();
      // SIGINT/SIGTERM stop the server, or the wait for its store.
      const stopped = new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      // Spans are exported only when an OTLP endpoint is configured; flushed at shutdown.
      const stopTracing = startTracingFromEnv(packageVersion());
      // Its logs go to stderr (stdout says where it listens): text on a terminal, JSON lines otherwise.
      const logger = new CliLogger(output.io.stderr, levelsAt(logLevelSetting()), { format: output.io.stderr.isTTY ? 'text' : 'json', redactor: Redactor.fromEnv() });
      // The address first: a port in use or a host that is not this machine's is said before
      // the store is opened or created.
      await probeAddress(config.host, config.port);
      const start = async () => {
        // Keys come from TRIAD_API_KEYS and from the store (`triad keys add`); checked before the app
        // starts, so a server that refuses to start has driven no run.
        if (config.apiKeys.length === 0 && (await countStoredApiKeys(config)) === 0) {
          throw new CliError('no API keys are configured: set TRIAD_API_KEYS=name:role+role:secret or add one with `triad keys add` (see README)', EXIT.usage);
        }
        return createHttpApp({ logger });
      };
      let app: Awaited<ReturnType<typeof createHttpApp>> | undefined;
      try {
        // A PostgreSQL or EventStoreDB store that is not there yet is waited for (GET /health 503
        // meanwhile); SQLite is a local file, so its failures are not worth waiting on.
        app = await waitForStore({
          start,
          transient: (err) => config.store !== 'sqlite' && !(err instanceof CliError) && (isStoreUnavailable(err) || isStoreUnavailable((err as Error)?.cause)),
          store: config.store,
          host: config.host,
          port: config.port,
          log: (line) => output.err(line),
          stopped,
        });
      } catch (err) {
        // One line, as for every other command: a configuration error is exit 2, anything else 1.
        if (err instanceof ConfigError || err instanceof CliError) throw err;
        throw new CliError(`cannot start: the ${config.store} store cannot be opened: ${(err as Error).message}`, EXIT.failed);
      }
      if (!app) {
        // No app to serve (the command ended early): spans not flushed at exit are lost, nothing else.
        await stopTracing?.().catch(() => undefined);
        return;
      }
      try {
        await app.listen(config.port, config.host);
      } catch (err) {
        // Nothing may go on without the API: the background work the app started stops with it. The
        // listen error is the one to report (thrown below), not a close or a flush that fails after it.
        await app.close().catch(() => undefined);
        await stopTracing?.().catch(() => undefined);
        throw listenError(config.host, config.port, err);
      }
      const address = app.getHttpServer().address();
      const port = address !== null && typeof address === 'object' ? address.port : config.port;
      // MCP servers are connected now rather than at the first launch: a server that cannot start
      // shows in the log at once (and is tried again when a launch or a run needs it). Nothing waits
      // for it, and it never rejects: a server that fails is logged and left out.
      void app.get<ToolRegistry>(TOOL_REGISTRY).ready();
      const model = app.get<ModelProvider>(MODEL_PROVIDER);
      const sandbox = app.get<Sandbox>(SANDBOX);
      const summary = describeConfig(config);
      const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
      const listening = `triad listening on ${url} — store ${summary.store}, data ${summary.dataDir}, ${providerLine(model)}, sandbox ${sandbox.state}`;
      output.out(`${listening}\n`);
      // The one log line of a start, its facts as fields; a sandbox that is not on is warned of as well.
      logger.log(listening, { event: 'serve_started', address: url, store: config.store, dataDir: config.dataDir, model: model.name, ...(model.endpoint ? { endpoint: model.endpoint } : {}), sandbox: sandbox.state, version: packageVersion() }, 'Serve');
      if (sandbox.state === 'off') logger.warn('the sandbox is off (TRIAD_SANDBOX=off): agents\' commands and stdio MCP servers run as this server, and can read its environment (API keys), its data directory and every other run\'s workspace, and reach the network; every run launched here is recorded as unsandboxed', 'Sandbox');
      else if (sandbox.state === 'unavailable') logger.warn(`the sandbox ${sandbox.describe()}`, 'Sandbox');
      else logger.debug(`sandbox: ${sandbox.describe()}`, 'Sandbox');
      await stopped;
      await app.close();
      // At exit: spans that cannot be flushed are lost; the server stopped cleanly all the same.
      await stopTracing?.().catch(() => undefined);
    });
}

/** Binds the address once and lets it go: what would stop the server listening, said up front. */
async function probeAddress(host: string, port: number): Promise<void> {
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, host, () => resolve());
    });
  } catch (err) {
    throw listenError(host, port, err);
  } finally {
    await new Promise((resolve) => probe.close(resolve));
  }
}

function listenError(host: string, port: number, err: unknown): CliError {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'EADDRINUSE'
      ? 'the port is in use'
      : code === 'EADDRNOTAVAIL'
        ? "the address is not one of this machine's"
        : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? 'the host name does not resolve'
          : code === 'EACCES'
            ? 'permission denied'
            : (err as Error).message;
  return new CliError(`cannot listen on ${host}:${port}: ${why}`, EXIT.failed);
}
