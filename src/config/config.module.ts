import { Global, Module } from '@nestjs/common';
import { loadConfig, type TriadConfig } from './config';

export const TRIAD_CONFIG = Symbol('TRIAD_CONFIG');

@Global()
@Module({
  providers: [{ provide: TRIAD_CONFIG, useFactory: (): TriadConfig => loadConfig() }],
  exports: [TRIAD_CONFIG],
})
export class ConfigModule {}
