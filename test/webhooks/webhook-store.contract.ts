import { DELIVERY_LOG_SIZE, type DeliveryRecord, type StoredWebhookEndpoint, type WebhookStore } from '../../src/webhooks/store/webhook-store.port';

/** The webhook store's contract: every adapter (memory, SQLite, PostgreSQL) runs it. */
export function webhookStoreContract(name: string, open: () => Promise<{ store: WebhookStore; cleanup(): Promise<void> }>): void {
  describe(`webhook store contract: ${name}`, () => {
    let store: WebhookStore;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await open());
    });
    afterEach(() => cleanup());

    const endpoint = (id: string, over: Partial<StoredWebhookEndpoint> = {}): StoredWebhookEndpoint => ({
      id,
      url: 'https://hooks.example.com/x',
      events: ['review.opened', 'run.ended'],
      allowPrivate: false,
      secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0',
      secretHint: 'ZXQ=',
      createdBy: 'user:ann',
      createdAt: `2026-01-01T00:00:0${id.length % 10}.000Z`,
      position: 7,
      ...over,
    });
    const delivery = (endpointId: string, position: number, over: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
      endpointId,
      eventId: `ev-${position}`,
      position,
      webhookId: `msg_${position}`,
      type: 'run.ended',
      status: 'retrying',
      attempts: 1,
      responseCode: 503,
      error: 'HTTP 503',
      firstAttemptAt: '2026-01-01T00:00:00.000Z',
      lastAttemptAt: '2026-01-01T00:00:00.000Z',
      nextRetryAt: '2026-01-01T00:00:01.000Z',
      ...over,
    });

    it('lists endpoints without their secret, and gives the secret to the delivery worker only', async () => {
      await store.add(endpoint('wh_a'));
      const listed = await store.list();
      expect(listed).toEqual([expect.objectContaining({ id: 'wh_a', events: ['review.opened', 'run.ended'], allowPrivate: false, position: 7 })]);
      expect(JSON.stringify(listed)).not.toContain('whsec_');
      expect(JSON.stringify(await store.get('wh_a'))).not.toContain('whsec_');
      expect((await store.forDelivery('wh_a'))?.secret).toBe('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0');
    });

    it('records attempts, settles a delivery with the position in one write, and never moves the position back', async () => {
      await store.add(endpoint('wh_b'));
      await store.recordAttempt(delivery('wh_b', 10));
      expect(await store.delivery('wh_b', 'ev-10')).toMatchObject({ attempts: 1, status: 'retrying', responseCode: 503 });
      expect((await store.get('wh_b'))?.position).toBe(7);
      await store.settle(delivery('wh_b', 10, { status: 'delivered', attempts: 2, responseCode: 200, error: undefined, nextRetryAt: undefined }));
      const settled = await store.delivery('wh_b', 'ev-10');
      expect(settled).toMatchObject({ status: 'delivered', attempts: 2, responseCode: 200 });
      expect(settled?.nextRetryAt).toBeUndefined();
      expect((await store.get('wh_b'))?.position).toBe(10);
      await store.advance('wh_b', 9);
      expect((await store.get('wh_b'))?.position).toBe(10);
      await store.advance('wh_b', 12);
      expect((await store.get('wh_b'))?.position).toBe(12);
    });

    it('records no delivery of an endpoint removed meanwhile', async () => {
      await store.add(endpoint('wh_d'));
      expect(await store.remove('wh_d')).toBe(true);
      await store.recordAttempt(delivery('wh_d', 3));
      await store.settle(delivery('wh_d', 4, { status: 'delivered' }));
      expect(await store.deliveries('wh_d', 10)).toEqual([]);
      expect(await store.list()).toEqual([]);
    });

    it('keeps the last deliveries, newest first, and forgets them with the endpoint', async () => {
      await store.add(endpoint('wh_c'));
      for (let p = 1; p <= DELIVERY_LOG_SIZE + 3; p++) await store.settle(delivery('wh_c', p, { status: 'delivered' }));
      const log = await store.deliveries('wh_c', 500);
      expect(log.length).toBeGreaterThanOrEqual(DELIVERY_LOG_SIZE);
      expect(log.length).toBeLessThanOrEqual(DELIVERY_LOG_SIZE + 1);
      expect(log[0].position).toBe(DELIVERY_LOG_SIZE + 3);
      expect((await store.deliveries('wh_c', 2)).map((d) => d.position)).toEqual([DELIVERY_LOG_SIZE + 3, DELIVERY_LOG_SIZE + 2]);
      expect(await store.remove('wh_c')).toBe(true);
      expect(await store.remove('wh_c')).toBe(false);
      expect(await store.get('wh_c')).toBeUndefined();
      expect(await store.deliveries('wh_c', 10)).toEqual([]);
    });
  });
}
