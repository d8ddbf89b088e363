import 'reflect-metadata';
import { type INestApplication, type LoggerService, type LogLevel, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from '../app.module';
import { ErrorFilter } from './error.filter';
import { WellFormedInputPipe, withUtf8Check } from './well-formed-input';
import { ReviewTimers } from '../review-gate/review-timers';
import { RecoveryService } from '../team/recovery.service';
import { ApprovalTimers } from '../team/approvals/approval-timers';

export const VALIDATION_PIPE = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  // Undefined optional fields stay absent instead of failing nested validation.
  skipMissingProperties: false,
  stopAtFirstError: false,
});

/** The HTTP app, configured the same way for `triad serve` and for e2e tests. */
export async function createHttpApp(options: { logger?: LogLevel[] | false | LoggerService } = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { logger: options.logger ?? ['error', 'warn', 'log'] });
  app.useBodyParser('json', withUtf8Check({ limit: '2mb' }));
  app.useGlobalPipes(new WellFormedInputPipe(), VALIDATION_PIPE);
  app.useGlobalFilters(new ErrorFilter());
  await app.init();
  // Background work of a serving process: durable review timers and crash recovery.
  app.get(ReviewTimers).start();
  app.get(ApprovalTimers).start();
  app.get(RecoveryService).start();
  return app;
}
