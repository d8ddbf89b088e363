/** Wakes in-process waiters when the store's head moves; subscriptions fall back to polling for other processes. */
export class PositionNotifier {
  private head = 0;
  private waiters = new Set<{ after: number; resolve: () => void }>();

  /** The highest position notified so far. */
  get known(): number {
    return this.head;
  }

  notify(position: number): void {
    if (position > this.head) this.head = position;
    for (const w of this.waiters) {
      if (this.head > w.after) {
        this.waiters.delete(w);
        w.resolve();
      }
    }
  }

  wait(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.head > after || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        after,
        resolve: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.waiters.delete(waiter);
        waiter.resolve();
      };
      const timer = setTimeout(onAbort, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** Releases every waiter (store closing). */
  releaseAll(): void {
    for (const w of this.waiters) w.resolve();
    this.waiters.clear();
  }
}
