import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { ApiKeyGuard } from './auth.guard';
import { AuthAttempts } from './auth-attempts';
import { METRICS, type TriadMetrics } from '../observability/metrics';
import { ConsoleSessions } from './console-sessions';
import { ConsoleSessionController } from './console-session.controller';
import { ApiKeyDirectory } from './identity';
import { AddApiKeyHandler, RegisterPublicKeyHandler, RevokePublicKeyHandler } from './keys/add-api-key.command';
import { StoredApiKeys } from './keys/stored-api-keys';
import { PasskeyChallenges } from './passkeys/passkey-challenges';
import { PasskeysController } from './passkeys/passkeys.controller';
import { PERSONAL_KEYS } from './passkeys/personal-keys.port';
import { StorePersonalKeys } from './passkeys/store-personal-keys';

@Global()
@Module({
  imports: [CqrsModule],
  controllers: [ConsoleSessionController, PasskeysController],
  providers: [
    // Web console sessions, in this process's memory (console-sessions.ts).
    { provide: ConsoleSessions, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => new ConsoleSessions(c.sessionTtlMs) },
    { provide: ApiKeyDirectory, inject: [TRIAD_CONFIG], useFactory: (c: TriadConfig) => new ApiKeyDirectory(c.apiKeys) },
    // Keys added with `triad keys add`: loaded at boot, then followed from the store.
    StoredApiKeys,
    AddApiKeyHandler,
    RegisterPublicKeyHandler,
    RevokePublicKeyHandler,
    // Passkey enrolment (passkeys/): challenges waiting in this process, keys in the apikeys stream.
    { provide: PasskeyChallenges, useFactory: () => new PasskeyChallenges() },
    { provide: PERSONAL_KEYS, useClass: StorePersonalKeys },
    // Failed authentications per client address (auth-attempts.ts).
    {
      provide: AuthAttempts,
      inject: [TRIAD_CONFIG, METRICS],
      useFactory: (c: TriadConfig, metrics: TriadMetrics) => new AuthAttempts(c.http.authFailuresPerWindow, c.http.authFailureWindowMs, (outcome) => metrics.observeAuthFailure(outcome)),
    },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
  ],
  exports: [ApiKeyDirectory, AuthAttempts],
})
export class AuthModule {}
