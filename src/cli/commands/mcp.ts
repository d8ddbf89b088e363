import { Logger } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Command } from 'commander';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { ProjectsService } from '../../projects/projects.service';
import { DecisionLogService } from '../../review-gate/decision-log/decision-log.providers';
import { RunDispatcher } from '../../team/dispatch/run-dispatch';
import { RunSupervisor } from '../../team/dispatch/run-supervisor';
import { RunsProjection } from '../../team/runs/runs.projection';
import { TriadOperations } from '../../integrations/mcp/triad-operations';
import type { CliContext } from '../cli-context';
import { packageVersion } from '../cli-io';
import { cliIdentity } from '../options';

/**
 * `triad mcp`: triad's MCP tools on stdio, for an MCP client that starts it (an editor, an agent).
 * Like every other verb it works on the configured store directly, as the local user (TRIAD_USER or
 * the OS account); and like `triad serve` without HTTP it drives the runs and projects it launches
 * (and any other placed on it) while it runs. When its client closes stdin it stops: runs still in
 * flight are suspended and continued by `triad serve`'s recovery or `triad resume`.
 */
export function addMcpCommand(program: Command, { withApp }: CliContext): void {
  program
    .command('mcp')
    .description('an MCP server on stdio: tools that launch runs and projects and read them (none decides a review or a tool call)')
    .action(async () => {
      await withApp(async (app) => {
        await app.get(RunSupervisor).startServing();
        await app.get(RunDispatcher).start();
        await app.get(ProjectsService).start();
        const deps = {
          commands: app.get(CommandBus),
          queries: app.get(QueryBus),
          store: app.get<symbol, EventStore>(EVENT_STORE),
          projects: app.get(ProjectsService),
          runs: app.get(RunsProjection),
          decisions: app.get(DecisionLogService),
        };
        // The MCP SDK's server side is loaded here, not with the program: every other verb starts without it.
        const [{ StdioServerTransport }, { buildTriadMcpServer }] = await Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('../../integrations/mcp/triad-mcp-server')]);
        const server = buildTriadMcpServer(new TriadOperations(deps, cliIdentity()), packageVersion(), new Logger('MCP'));
        const closed = new Promise<void>((resolve) => {
          process.stdin.once('end', resolve);
          process.stdin.once('close', resolve);
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await server.connect(new StdioServerTransport(process.stdin, process.stdout));
        await closed;
        await server.close();
      });
    });
}
