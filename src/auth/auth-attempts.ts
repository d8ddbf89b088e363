import { HttpException, HttpStatus } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

/**
 * Failed authentications per client address (rate-limiter-flexible, in this process's memory).
 * Only failures count: a client that authenticates is never slowed however often it calls. An
 * address that failed `points` times within the window is refused 429 with Retry-After until the
 * window ends — every credentialed request from it, a valid key included, since answering a valid
 * key while refusing the others would tell a guesser which key is right at full speed. Other
 * addresses are not affected. Behind a proxy, the address is the one `TRIAD_TRUST_PROXY` trusts
 * X-Forwarded-For for (Express's `req.ip`).
 */
export class AuthAttempts {
  private readonly limiter: RateLimiterMemory;

  constructor(
    readonly points: number,
    windowMs: number,
    private readonly counted: (outcome: 'failed' | 'limited') => void = () => undefined,
  ) {
    this.limiter = new RateLimiterMemory({ points, duration: Math.ceil(windowMs / 1000) });
  }

  /** Throws 429 (with the seconds to wait) when `address` has used up its failures. */
  async refuseIfLimited(address: string, setHeader: (name: string, value: string) => void): Promise<void> {
    const state = await this.limiter.get(address);
    if (state === null || state.consumedPoints < this.points) return;
    this.counted('limited');
    const seconds = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    setHeader('Retry-After', String(seconds));
    throw new HttpException(`too many failed authentications from this address; try again in ${seconds} s`, HttpStatus.TOO_MANY_REQUESTS);
  }

  /** One failed authentication of `address`. */
  async failed(address: string): Promise<void> {
    this.counted('failed');
    // Rejects (a RateLimiterRes) once the points are used: that is the limit being reached, not an error.
    await this.limiter.consume(address).catch((res: unknown) => {
      if (!(res instanceof RateLimiterRes)) throw res;
    });
  }
}
