import type { Command } from 'commander';
import { countStoredApiKeys } from '../../auth/keys/count-stored-api-keys';
import { ConfigError, describeConfig, loadConfig } from '../../config/config';
import { createHttpApp } from '../../http/bootstrap';
import { MODEL_PROVIDER, type ModelProvider } from '../../team/models/model.port';
import type { CliContext } from '../cli-context';
import { CliLogger } from '../cli-io';
import { CliError, EXIT } from '../exit-codes';
import { providerLine } from '../format';

/** `triad serve`: the HTTP API, until SIGINT or SIGTERM. */
export function addServeCommand(program: Command, { output }: CliContext): void {
  program
    .command('serve')
    .description('serve the HTTP API (TRIAD_HOST:TRIAD_PORT) and drive runs')
    .action(async () => {
      const config = loadConfig();
      // Keys come from TRIAD_API_KEYS and from the store (`triad keys add`); checked before the app
      // starts, so a server that refuses to start has driven no run.
      if (config.apiKeys.length === 0 && (await countStoredApiKeys(config)) === 0) {
        throw new CliError('no API keys are configured: set TRIAD_API_KEYS=name:role+role:secret or add one with `triad keys add` (see README)', EXIT.usage);
      }
      // Its request and lifecycle logs go to stderr: stdout says where it listens.
      let app: Awaited<ReturnType<typeof createHttpApp>>;
      try {
        app = await createHttpApp({ logger: new CliLogger(output.io.stderr, ['error', 'warn', 'log']) });
      } catch (err) {
        // One line, as for every other command: a configuration error is exit 2, anything else 1.
        if (err instanceof ConfigError) throw err;
        throw new CliError(`cannot start: the ${config.store} store cannot be opened: ${(err as Error).message}`, EXIT.failed);
      }
      await app.listen(config.port, config.host);
      const model = app.get<ModelProvider>(MODEL_PROVIDER);
      const summary = describeConfig(config);
      output.out(
        `triad listening on http://${config.host}:${config.port} — store ${summary.store}, data ${summary.dataDir}, ${providerLine(model)}\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await app.close();
    });
}
