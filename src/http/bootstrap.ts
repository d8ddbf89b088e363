import 'reflect-metadata';
import { BadRequestException, type INestApplication, type LoggerService, type LogLevel, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication, NestExpressBodyParserOptionsFor } from '@nestjs/platform-express';
import { AppModule } from '../app.module';
import { ErrorFilter } from './error.filter';
import { WellFormedInputPipe, withUtf8Check } from './well-formed-input';
import { RouteInputsGuard } from './route-inputs';
import { validationMessages } from './validation-messages';
import { answerClientErrorsAsJson } from './client-errors';
import { methodNotAllowed } from './method-not-allowed';
import { describeDecodingErrors, enforceBodyLimits, requireJsonBody, verifyJsonShape } from './request-body.middleware';
import { ReviewTimers } from '../review-gate/review-timers';
import { RecoveryService } from '../team/dispatch/recovery.service';
import { RunDispatcher } from '../team/dispatch/run-dispatch';
import { ProjectsService } from '../projects/projects.service';
import { WebhookDelivery } from '../webhooks/webhook-delivery';
import { RunSupervisor } from '../team/dispatch/run-supervisor';
import { ApprovalTimers } from '../team/approvals/approval-timers';
import { METRICS, type TriadMetrics } from '../observability/metrics';
import { httpMetrics } from '../observability/http-metrics';
import { serveOpenApi } from './openapi';
import { packageVersion } from '../cli/cli-io';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { serveConsole } from './console-assets';
import { edgeChecks, limitServer, MAX_BODY_BYTES, type EdgeRefusal } from './edge';
import { securityHeaders } from './security-headers';

export const VALIDATION_PIPE = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  // The handler gets the validated DTO instance; values keep their JSON types (`"1"` is no number).
  transform: true,
  transformOptions: { enableImplicitConversion: false },
  // Undefined optional fields stay absent instead of failing nested validation.
  skipMissingProperties: false,
  stopAtFirstError: false,
  // One message per failing field: `x is required`, or its type error, or its first failing limit.
  exceptionFactory: (errors) => new BadRequestException(validationMessages(errors)),
});

/** The HTTP app, configured the same way for `triad serve` and for e2e tests. */
export async function createHttpApp(options: { logger?: LogLevel[] | false | LoggerService } = {}): Promise<INestApplication> {
  // bodyParser: false: no form-encoded parser; JSON is the only body format read.
  // abortOnError: false: a module that cannot start (the store cannot be opened) is thrown to the
  // caller, which says why, instead of Nest ending the process with the reason only in its log.
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { logger: options.logger ?? ['error', 'warn', 'log'], bodyParser: false, abortOnError: false });
  const config = app.get<TriadConfig>(TRIAD_CONFIG);
  const metrics = app.get<symbol, TriadMetrics>(METRICS);
  const refused = (reason: EdgeRefusal): void => metrics.observeEdgeRefusal(reason);
  // Node's own limits on how long a request may take to arrive, set before it listens (edge.ts).
  limitServer(app.getHttpServer(), config.http, refused);
  answerClientErrorsAsJson(app.getHttpServer(), () => refused('timeout'));
  app.disable('x-powered-by');
  // First, so requests refused by the gates below are counted too.
  app.use(httpMetrics((method, route, status, seconds) => metrics.observeHttp(method, route, status, seconds)));
  // Whether X-Forwarded-Proto/-Host say how the request reached triad (the console cookie's Secure, the CSRF origin).
  app.set('trust proxy', config.trustProxy);
  app.use(securityHeaders);
  // Before routing and before any body is read: a Host triad does not serve, a body over the limit.
  app.use(edgeChecks(config.http.allowedHosts, refused));
  // No ETag on answers: Express would hash every JSON body (event pages included) for a 304 that
  // triad's clients never ask for; the console's own files keep theirs (serve-static sets them).
  app.set('etag', false);
  serveConsole(app);
  app.use(methodNotAllowed(app));
  app.use(requireJsonBody);
  // Raw bytes first: UTF-8, then nesting and value counts, both before the body is parsed.
  // Nest's type reserves `verify` for its rawBody option, which triad does not use.
  app.useBodyParser('json', withUtf8Check({ limit: MAX_BODY_BYTES, verify: verifyJsonShape }) as NestExpressBodyParserOptionsFor<'json'>);
  app.use(describeDecodingErrors);
  app.use(enforceBodyLimits);
  // After the API-key guard (an app-wide provider, registered when the app is created).
  app.useGlobalGuards(new RouteInputsGuard());
  app.useGlobalPipes(new WellFormedInputPipe(), VALIDATION_PIPE);
  app.useGlobalFilters(new ErrorFilter());
  // Before init: Nest's not-found handler is registered at init and would shadow later routes.
  serveOpenApi(app, packageVersion());
  await app.init();
  // Background work of a serving process: drivers for the runs that need one, durable review and
  // approval timers, and crash recovery.
  // Advertised first: launches made here from now on are placed (see Placement.place).
  await app.get(RunSupervisor).startServing();
  await app.get(RunDispatcher).start();
  await app.get(ProjectsService).start();
  app.get(ReviewTimers).start();
  app.get(ApprovalTimers).start();
  app.get(RecoveryService).start();
  // Webhooks from the event log (none on a store that keeps no webhooks).
  app.get<typeof WebhookDelivery, WebhookDelivery | null>(WebhookDelivery)?.start();
  return app;
}
