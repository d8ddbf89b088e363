import type { OnApplicationShutdown } from '@nestjs/common';
import type { RunLeases } from '../team/leases/run-leases.port';
import { EndpointWorker, type EndpointWorkerDeps } from './endpoint-worker';
import type { WebhookStore } from './store/webhook-store.port';

/** The lease key of an endpoint's delivery, in the run leases' table (as a project's planning is). */
export const webhookLeaseKey = (endpointId: string): string => `webhook:${endpointId}`;

export interface WebhookDeliveryOptions {
  webhooks: WebhookStore;
  leases: RunLeases;
  owner: string;
  leaseTtlMs: number;
  now(): number;
  worker: EndpointWorkerDeps;
}

/**
 * Who delivers which endpoint: every serving process looks over the endpoints every quarter of a
 * lease TTL, takes the lease of each endpoint nobody holds (one process gets it), runs an
 * EndpointWorker for each endpoint it holds, renews their leases in one statement, and stops the
 * worker of an endpoint whose lease another process took or that was removed. A process that
 * dies leaves leases that expire: another takes the endpoints over from their stored positions.
 * Started by `triad serve` only; one-shot CLI commands deliver nothing.
 */
export class WebhookDelivery implements OnApplicationShutdown {
  private readonly workers = new Map<string, EndpointWorker>();
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly o: WebhookDeliveryOptions) {}

  /** Starts looking over the endpoints (idempotent); the first look is made at once. */
  start(): void {
    if (this.timer || this.stopped) return;
    const every = Math.max(25, Math.floor(this.o.leaseTtlMs / 4));
    this.timer = setInterval(() => this.poke(), every);
    this.timer.unref();
    this.poke();
  }

  /** Looks over the endpoints soon (after an add or a remove here); a look asked for while one runs follows it. */
  poke(): void {
    if (this.stopped || !this.timer) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick()
      .catch((err: unknown) => this.o.worker.logger.error(`webhook endpoints not looked over (the next look tries again): ${(err as Error).message}`))
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  /** Endpoints this process delivers now (tests, /metrics). */
  get delivering(): string[] {
    return [...this.workers.keys()];
  }

  private async tick(): Promise<void> {
    const endpoints = new Set((await this.o.webhooks.list()).map((e) => e.id));
    for (const [id, worker] of this.workers) {
      if (endpoints.has(id)) continue;
      this.workers.delete(id);
      await worker.stop();
      await this.o.leases.release(webhookLeaseKey(id), this.o.owner);
    }
    const held = [...this.workers.keys()];
    const renewed = await this.o.leases.renewAll(held.map(webhookLeaseKey), this.o.owner, this.o.leaseTtlMs, this.o.now());
    for (const id of held) {
      if (renewed.has(webhookLeaseKey(id))) continue;
      // Another process holds it now (this one was too slow to renew): it goes on from the stored position.
      const worker = this.workers.get(id)!;
      this.workers.delete(id);
      this.o.worker.logger.warn(`webhook ${id}: another process delivers it now`);
      await worker.stop();
    }
    for (const id of endpoints) {
      if (this.stopped || this.workers.has(id)) continue;
      if (!(await this.o.leases.tryAcquire(webhookLeaseKey(id), this.o.owner, this.o.leaseTtlMs, this.o.now()))) continue;
      const worker = new EndpointWorker(id, this.o.worker);
      this.workers.set(id, worker);
      worker.start();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const workers = [...this.workers.values()];
    this.workers.clear();
    await Promise.all(workers.map((w) => w.stop()));
    for (const w of workers) {
      await this.o.leases.release(webhookLeaseKey(w.endpointId), this.o.owner).catch((err: unknown) => {
        // The lease then lapses after its TTL, and another process takes the endpoint over.
        this.o.worker.logger.warn(`webhook ${w.endpointId}: lease not released (it lapses after its TTL): ${(err as Error).message}`);
      });
    }
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }
}
