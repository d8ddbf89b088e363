import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { ApiKeyGuard } from './auth.guard';
import { ConsoleSessions } from './console-sessions';
import { ConsoleSessionController } from './console-session.controller';
import { ApiKeyDirectory } from './identity';
import { AddApiKeyHandler, RegisterPublicKeyHandler, RevokePublicKeyHandler } from './keys/add-api-key.command';
import { StoredApiKeys } from './keys/stored-api-keys';

@Global()
@Module({
  imports: [CqrsModule],
  controllers: [ConsoleSessionController],
  providers: [
    // Web console sessions, in this process's memory (console-sessions.ts).
    { provide: ConsoleSessions, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => new ConsoleSessions(c.sessionTtlMs) },
    { provide: ApiKeyDirectory, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => new ApiKeyDirectory(c.apiKeys) },
    // Keys added with `triad keys add`: loaded at boot, then followed from the store.
    StoredApiKeys,
    AddApiKeyHandler,
    RegisterPublicKeyHandler,
    RevokePublicKeyHandler,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
  ],
  exports: [ApiKeyDirectory],
})
export class AuthModule {}
