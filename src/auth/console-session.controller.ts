import { Body, Controller, Delete, ForbiddenException, Get, HttpCode, Inject, Post, Req, Res, UnauthorizedException } from '@nestjs/common';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import type { CookieOptions, Request, Response } from 'express';
import { ownOrigin, Public, SignedOutOk, type AuthenticatedRequest } from './auth.guard';
import { ConsoleSessions, CSRF_HEADER, csrfViolation, readCookie, sameOrigin, SESSION_COOKIE, type SessionView } from './console-sessions';
import { AuthAttempts } from './auth-attempts';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';
import { ApiKeyDirectory, hashSecret } from './identity';

export class SignInDto {
  @IsString() @IsNotEmpty() @MaxLength(1000) apiKey!: string;
}

/**
 * The web console's sign-in: an API key for a session cookie (HttpOnly, SameSite=Strict, Secure
 * when the request reached triad over TLS), and sign-out. See console-sessions.ts.
 */
@Controller('v1/session')
export class ConsoleSessionController {
  constructor(
    @Inject(ApiKeyDirectory) private readonly keys: ApiKeyDirectory,
    @Inject(ConsoleSessions) private readonly sessions: ConsoleSessions,
    @Inject(AuthAttempts) private readonly attempts: AuthAttempts,
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
  ) {}

  @Post()
  @Public()
  @HttpCode(200)
  async signIn(@Body() body: SignInDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<SessionView> {
    // A page of another site must not sign a browser in (login CSRF); JSON bodies already need a preflight.
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, ownOrigin(req as unknown as AuthenticatedRequest), this.config.http.allowedHosts)) throw new ForbiddenException('the request comes from another origin');
    // A sign-in is an authentication like a bearer key's: limited by its address's failures.
    const address = req.ip ?? 'unknown';
    await this.attempts.refuseIfLimited(address, (name, value) => res.setHeader(name, value));
    const identity = this.keys.authenticate(body.apiKey);
    if (!identity) {
      await this.attempts.failed(address);
      throw new UnauthorizedException('the API key is not valid');
    }
    const opened = this.sessions.open(identity, hashSecret(body.apiKey));
    res.cookie(SESSION_COOKIE, opened.sessionId, { ...this.cookieOptions(req), maxAge: this.sessions.ttlMs });
    res.setHeader('Cache-Control', 'no-store');
    return { signedIn: true, identity, csrfToken: opened.csrfToken, expiresAt: new Date(opened.expiresAt).toISOString() };
  }

  /** Who is signed in (any valid session or key), with the CSRF token for a session; `signedIn: false` for nobody. */
  @Get()
  @SignedOutOk()
  current(@Req() req: Request, @Res({ passthrough: true }) res: Response): SessionView {
    const r = req as unknown as AuthenticatedRequest;
    res.setHeader('Cache-Control', 'no-store');
    if (!r.identity) return { signedIn: false };
    const s = r.consoleSession?.session;
    return s ? { signedIn: true, identity: r.identity, csrfToken: s.csrfToken, expiresAt: new Date(s.expiresAt).toISOString() } : { signedIn: true, identity: r.identity };
  }

  /** Ends the session of the cookie (which must come with its CSRF token) and clears the cookie; 204 also when none was live. */
  @Delete()
  @Public()
  @HttpCode(204)
  signOut(@Req() req: Request, @Res({ passthrough: true }) res: Response): void {
    const sessionId = readCookie(req.headers.cookie, SESSION_COOKIE);
    const session = sessionId === undefined ? undefined : this.sessions.find(sessionId);
    if (sessionId !== undefined && session) {
      const token = req.headers[CSRF_HEADER];
      const violation = csrfViolation({
        method: req.method,
        origin: req.headers.origin,
        ownOrigin: ownOrigin(req as unknown as AuthenticatedRequest),
        allowedHosts: this.config.http.allowedHosts,
        token: Array.isArray(token) ? token[0] : token,
        session,
      });
      if (violation) throw new ForbiddenException(violation);
      this.sessions.close(sessionId);
    }
    res.clearCookie(SESSION_COOKIE, this.cookieOptions(req));
  }

  private cookieOptions(req: Request): CookieOptions {
    return { httpOnly: true, sameSite: 'strict', secure: req.secure, path: '/' };
  }
}
