import { Inject, Injectable } from '@nestjs/common';
import { join } from 'node:path';
import { TRIAD_CONFIG } from '../../config/config.module';
import type { TriadConfig } from '../../config/config';
import { createWorkspace } from '../tools/workspace';

/** Where runs' workspaces live (one folder per run under the data dir): the driver pool and a fork make them. */
@Injectable()
export class RunWorkspaces {
  readonly root: string;

  constructor(@Inject(TRIAD_CONFIG) config: Pick<TriadConfig, 'dataDir'>) {
    this.root = join(config.dataDir, 'workspaces');
  }

  /** The run's workspace, made if missing; its real path (see createWorkspace). */
  prepare(runId: string): Promise<string> {
    return createWorkspace(this.root, runId);
  }
}
