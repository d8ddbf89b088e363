import { Body, Controller, ForbiddenException, Get, Inject, Post, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AgentCard, formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { ownOrigin, Public, type AuthenticatedRequest } from '../../auth/auth.guard';
import { CurrentIdentity } from '../../auth/current-identity.decorator';
import { hasRole, type Identity } from '../../auth/identity';
import { MAY } from '../../auth/roles';
import { EVENT_STORE, type EventStore } from '../../events/event-store/event-store.port';
import { ProjectsService } from '../../projects/projects.service';
import { packageVersion } from '../../cli/cli-io';
import { agentCard, agentCardV03 } from './agent-card';
import { ABORT_SIGNAL_KEY, TriadA2aHandler, TriadA2aUser } from './triad-a2a-handler';

/** The methods that launch or cancel (1.0 and 0.3 names): the operator role, as POST /v1/runs and /cancel need. */
const OPERATING_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'CancelTask', 'message/send', 'message/stream', 'tasks/cancel']);

/** A heartbeat comment keeps proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;

/**
 * triad as an A2A agent: the agent card (public, as discovery needs) and the JSON-RPC endpoint
 * behind the API keys, inside the Nest app so the edge rules, body limits and security headers of
 * every route apply. `A2A-Version: 1.0` speaks A2A 1.0; no header (or 0.3) speaks 0.3
 * (`message/send`, `tasks/get`…), as the SDK's compatibility layer defines.
 */
@Controller()
export class A2aController {
  private readonly handler: TriadA2aHandler;
  private readonly v1: JsonRpcTransportHandler;
  private readonly v03: LegacyJsonRpcTransportHandler;
  private readonly version = packageVersion();

  constructor(commands: CommandBus, queries: QueryBus, @Inject(EVENT_STORE) store: EventStore, projects: ProjectsService) {
    this.handler = new TriadA2aHandler({ commands, queries, store, projects, card: () => agentCard('', this.version) });
    this.v1 = new JsonRpcTransportHandler(this.handler);
    this.v03 = new LegacyJsonRpcTransportHandler(this.handler);
  }

  // The paths of agent-card.ts, written out (the route table is read off the decorators).
  @Get('.well-known/agent-card.json')
  @Public()
  card(@Req() req: Request, @Res() res: Response): void {
    const base = ownOrigin(req as unknown as AuthenticatedRequest);
    const legacy = (req.header('a2a-version') ?? '0.3') === '0.3';
    res.setHeader('Vary', 'A2A-Version');
    res.setHeader('Cache-Control', 'no-cache');
    res.status(200).json(legacy ? agentCardV03(base, this.version) : AgentCard.toJSON(agentCard(base, this.version)));
  }

  // Left out of the OpenAPI document: A2A's JSON-RPC messages, which the A2A SDKs speak (docs/API.md, "OpenAPI").
  @ApiExcludeEndpoint()
  @Post('a2a')
  async rpc(@Body() body: Record<string, unknown>, @CurrentIdentity() who: Identity, @Req() req: Request, @Res() res: Response): Promise<void> {
    if (typeof body.method === 'string' && OPERATING_METHODS.has(body.method) && !hasRole(who, ...MAY.operateRuns)) {
      throw new ForbiddenException(`${body.method} needs the role ${MAY.operateRuns.join(' or ')}`);
    }
    const requested = req.header('a2a-version') || undefined;
    const legacy = (requested ?? '0.3') === '0.3';
    const mapError = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
    const errorAnswer = (err: unknown) => ({ jsonrpc: '2.0', id: (body.id as string | number | undefined) ?? null, error: mapError(err) });
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const context = new ServerCallContext({ user: new TriadA2aUser(who), requestedVersion: requested, state: new Map([[ABORT_SIGNAL_KEY, gone.signal]]) });
    let answer: Awaited<ReturnType<JsonRpcTransportHandler['handle']>>;
    try {
      validateVersion(context.requestedVersion, agentCard('', this.version), 'JSONRPC');
      answer = await (legacy ? this.v03 : this.v1).handle(body, context);
    } catch (err) {
      res.status(200).json(errorAnswer(err));
      return;
    }
    if (!isStream(answer)) {
      res.status(200).json(answer);
      return;
    }
    await this.stream(answer, res, errorAnswer);
  }

  /** A streaming answer: the first update (or its error, as plain JSON), then SSE until it ends or the client goes. */
  private async stream(updates: AsyncGenerator<unknown, void, undefined>, res: Response, errorAnswer: (err: unknown) => unknown): Promise<void> {
    let first: IteratorResult<unknown, void>;
    try {
      first = await updates.next();
    } catch (err) {
      res.status(200).json(errorAnswer(err));
      return;
    }
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    try {
      // A2A's own framing (`data:` lines only), which its clients parse.
      if (!first.done) res.write(formatSSEEvent(first.value));
      for (;;) {
        const next = await updates.next();
        if (next.done || res.writableEnded) break;
        res.write(formatSSEEvent(next.value));
      }
    } catch (err) {
      if (!res.writableEnded) res.write(formatSSEErrorEvent(errorAnswer(err)));
    } finally {
      clearInterval(heartbeat);
      await updates.return(undefined);
      res.end();
    }
  }
}

function isStream(answer: unknown): answer is AsyncGenerator<unknown, void, undefined> {
  return typeof (answer as { [Symbol.asyncIterator]?: unknown })?.[Symbol.asyncIterator] === 'function';
}
