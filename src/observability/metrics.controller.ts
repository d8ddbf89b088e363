import { Controller, Get, Headers, Inject, Res, UnauthorizedException } from '@nestjs/common';
import type { Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Public } from '../auth/auth.guard';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { METRICS, type TriadMetrics } from './metrics';

/** Compared as digests: equal lengths, so the comparison takes the same time whatever was sent. */
const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

@Controller()
@Public()
export class MetricsController {
  private readonly key?: Buffer;

  constructor(
    @Inject(METRICS) private readonly registry: TriadMetrics,
    @Inject(TRIAD_CONFIG) config: TriadConfig,
  ) {
    // A scraper's own key (TRIAD_METRICS_KEY), not an API key: Prometheus holds it in its config.
    if (config.http.metricsKey !== undefined) this.key = digest(config.http.metricsKey);
  }

  /** Prometheus text exposition (docs/OPERATIONS.md lists the series); behind TRIAD_METRICS_KEY when it is set. */
  @Get('metrics')
  async metrics(@Res({ passthrough: true }) res: Response, @Headers('authorization') authorization?: string): Promise<string> {
    if (this.key !== undefined) {
      const sent = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
      if (sent === undefined || !timingSafeEqual(digest(sent), this.key)) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="triad metrics"');
        throw new UnauthorizedException('the metrics need Authorization: Bearer <TRIAD_METRICS_KEY>');
      }
    }
    const text = await this.registry.text();
    res.setHeader('Content-Type', this.registry.contentType);
    return text;
  }
}
