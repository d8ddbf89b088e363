import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../auth/auth.guard';
import { METRICS, type TriadMetrics } from './metrics';

@Controller()
@Public()
export class MetricsController {
  constructor(@Inject(METRICS) private readonly registry: TriadMetrics) {}

  /** Prometheus text exposition (docs/OPERATIONS.md lists the series). */
  @Get('metrics')
  async metrics(@Res({ passthrough: true }) res: Response): Promise<string> {
    const text = await this.registry.text();
    res.setHeader('Content-Type', this.registry.contentType);
    return text;
  }
}
