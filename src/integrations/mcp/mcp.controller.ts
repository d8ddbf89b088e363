import { BadRequestException, Body, Controller, Inject, Logger, NotAcceptableException, Post, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import type { Identity } from '../../auth/identity';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { ProjectsService } from '../../projects/projects.service';
import { DecisionLogService } from '../../review-gate/decision-log/decision-log.providers';
import { RunsProjection } from '../../team/runs/runs.projection';
import { packageVersion } from '../../cli/cli-io';
import { TriadOperations, type TriadOperationsDeps } from './triad-operations';

/**
 * The MCP SDK's server side, loaded at the first request to /mcp: its schemas hold about 6.5 MiB
 * of heap and a share of every start, which a process no MCP client talks to has no use for.
 */
async function mcpSdk() {
  const [{ StreamableHTTPServerTransport }, { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS }, { buildTriadMcpServer }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('./triad-mcp-server'),
  ]);
  return { StreamableHTTPServerTransport, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, buildTriadMcpServer };
}

/**
 * triad's MCP server over streamable HTTP, stateless: each POST is one JSON-RPC message answered
 * as JSON by a server made for the caller the API-key guard authenticated (no session to steal or
 * resume, no GET stream: `GET /mcp` is 405). What the transport would refuse in its own words
 * (no JSON-RPC message, an Accept without both types, an unknown protocol version) is refused
 * first in triad's, like every other route. Left out of the OpenAPI document: its bodies are MCP's
 * JSON-RPC messages, which MCP clients and the MCP SDK speak (docs/API.md, "OpenAPI").
 */
@ApiExcludeController()
@Controller('mcp')
export class McpController {
  private readonly logger = new Logger('MCP');
  private readonly deps: TriadOperationsDeps;
  private readonly version = packageVersion();

  constructor(commands: CommandBus, queries: QueryBus, @Inject(EVENT_STORE) store: EventStore, projects: ProjectsService, runs: RunsProjection, decisions: DecisionLogService) {
    this.deps = { commands, queries, store, projects, runs, decisions };
  }

  @Post()
  async handle(@Body() body: Record<string, unknown>, @CurrentIdentity() who: Identity, @Req() req: Request, @Res() res: Response): Promise<void> {
    const accept = req.header('accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      throw new NotAcceptableException('an MCP client accepts both application/json and text/event-stream');
    }
    const { StreamableHTTPServerTransport, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, buildTriadMcpServer } = await mcpSdk();
    if (!JSONRPCMessageSchema.safeParse(body).success) throw new BadRequestException('the body must be one JSON-RPC 2.0 message');
    const protocol = req.header('mcp-protocol-version');
    if (protocol !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(protocol)) {
      throw new BadRequestException(`MCP protocol version ${JSON.stringify(protocol.slice(0, 40))} is not supported (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
    }
    const server = buildTriadMcpServer(new TriadOperations(this.deps, who), this.version, this.logger);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      // Closing a stateless server frees it; there is nothing to report to a client that has gone.
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}
