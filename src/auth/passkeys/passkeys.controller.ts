import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { IsObject } from 'class-validator';
import type { Response } from 'express';
import { registrationOptions, verifyRegistration, type WebAuthnKey } from '../../attestation/webauthn';
import { TRIAD_CONFIG } from '../../config/config.module';
import type { TriadConfig } from '../../config/config';
import { ConflictError, InvalidRequestError } from '../../shared/errors';
import type { Clock } from '../../shared/ports';
import { CLOCK } from '../../shared/system';
import { ownOrigin, type AuthenticatedRequest } from '../auth.guard';
import { CurrentIdentity } from '../current-identity.decorator';
import type { Identity } from '../identity';
import { ENROLMENT_TTL_MS, PasskeyChallenges } from './passkey-challenges';
import { PERSONAL_KEYS, type PersonalKeys } from './personal-keys.port';
import { relyingPartyFor } from './relying-party';

export class EnrolPasskeyDto {
  /** What @simplewebauthn/browser's startRegistration returned (checked in webauthn.ts). */
  @IsObject() response!: Record<string, unknown>;
}

export interface PasskeyView {
  keyId: string;
  /** The COSE public key (base64url): what a signature is checked against. */
  publicKey: string;
  rpId: string;
  origins: string[];
  transports?: string[];
  revoked: boolean;
}

/** A passkey answer with no enrolment of this person waiting for it. */
export class NoPasskeyEnrolmentError extends InvalidRequestError {
  override readonly name = 'NoPasskeyEnrolmentError';
}

export class PasskeyAlreadyRegisteredError extends ConflictError {
  override readonly name = 'PasskeyAlreadyRegisteredError';
}

/**
 * The signed-in person's passkeys (console session or API key): options to enrol one, the
 * enrolment, and the list. A passkey is registered to its enroller's name only; with it they sign
 * their own decisions (attestation/personal-signature.ts).
 */
@Controller('v1/auth/passkeys')
export class PasskeysController {
  constructor(
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
    @Inject(PERSONAL_KEYS) private readonly keys: PersonalKeys,
    @Inject(PasskeyChallenges) private readonly challenges: PasskeyChallenges,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Get()
  async list(@CurrentIdentity() who: Identity, @Res({ passthrough: true }) res: Response): Promise<{ passkeys: PasskeyView[] }> {
    res.setHeader('Cache-Control', 'no-store');
    const keys = await this.keys.keysOf(who.name);
    return {
      passkeys: keys.flatMap((k) =>
        k.key.type === 'webauthn' ? [{ keyId: k.key.keyId, publicKey: k.key.publicKey, rpId: k.key.rpId, origins: k.key.origins, ...(k.key.transports ? { transports: k.key.transports } : {}), revoked: k.revokedFrom !== undefined }] : [],
      ),
    };
  }

  /** Options for the browser's `navigator.credentials.create`; the challenge stays with this process until answered (5 minutes). */
  @Post('options')
  @HttpCode(200)
  async options(@CurrentIdentity() who: Identity, @Req() req: AuthenticatedRequest, @Res({ passthrough: true }) res: Response) {
    res.setHeader('Cache-Control', 'no-store');
    const rp = relyingPartyFor(this.config.webauthn, ownOrigin(req));
    const options = await registrationOptions({ rp, userName: who.name, exclude: await this.live(who.name), timeoutMs: ENROLMENT_TTL_MS });
    this.challenges.issue(who.id, options.challenge, rp, this.clock.now());
    return options;
  }

  @Post()
  @HttpCode(201)
  async enrol(@Body() body: EnrolPasskeyDto, @CurrentIdentity() who: Identity): Promise<PasskeyView> {
    const pending = this.challenges.take(who.id, this.clock.now());
    if (!pending) throw new NoPasskeyEnrolmentError('no passkey enrolment of yours is waiting (or it expired): ask POST /v1/auth/passkeys/options first');
    const key = await verifyRegistration(body.response, pending.challenge, pending.rp);
    if ((await this.live(who.name)).some((k) => k.keyId === key.keyId)) throw new PasskeyAlreadyRegisteredError('this passkey is registered to you already');
    await this.keys.register(who.name, key, who.id);
    return { keyId: key.keyId, publicKey: key.publicKey, rpId: key.rpId, origins: key.origins, ...(key.transports ? { transports: key.transports } : {}), revoked: false };
  }

  private async live(name: string): Promise<WebAuthnKey[]> {
    return (await this.keys.keysOf(name)).flatMap((k) => (k.key.type === 'webauthn' && k.revokedFrom === undefined ? [k.key] : []));
  }
}
