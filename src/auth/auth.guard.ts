import { type CanActivate, type ExecutionContext, ForbiddenException, Inject, Injectable, SetMetadata, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ConsoleSessions, CSRF_HEADER, csrfViolation, readCookie, SESSION_COOKIE, type ConsoleSession } from './console-sessions';
import { ApiKeyDirectory, hasRole, type HumanRole, type Identity } from './identity';
import { MAY, type GuardedAction } from './roles';
import { AuthAttempts } from './auth-attempts';
import { TRIAD_CONFIG } from '../config/config.module';
import type { TriadConfig } from '../config/config';

export const ROLES_KEY = 'triad:roles';
export const PUBLIC_KEY = 'triad:public';

/** Roles that may call a route (admin always may). No decorator: any authenticated identity. */
export const Roles = (...roles: HumanRole[]) => SetMetadata(ROLES_KEY, roles);
/** Guards a route or controller by the role table (`MAY` in roles.ts). */
export const May = (action: GuardedAction) => Roles(...MAY[action]);
export const Public = () => SetMetadata(PUBLIC_KEY, true);
export const SIGNED_OUT_OK_KEY = 'triad:signed-out-ok';
/**
 * A route that answers a request with no credential (or an ended console session) too, with no
 * identity: the console's session probe, which a signed-out page asks on load. A bearer key that
 * is not valid is still refused (and counted).
 */
export const SignedOutOk = () => SetMetadata(SIGNED_OUT_OK_KEY, true);

export interface AuthenticatedRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Express: `http` or `https` (X-Forwarded-Proto when the proxy is trusted). */
  protocol: string;
  /** Express: the Host (X-Forwarded-Host when the proxy is trusted), with its port. */
  host?: string;
  identity?: Identity;
  /** Express: the client's address (X-Forwarded-For's, when the proxy is trusted). */
  ip?: string;
  /** Set when the request was authenticated by a console session cookie. */
  consoleSession?: { sessionId: string; session: ConsoleSession };
}

/** This server's origin as the request reached it, to compare with the browser's Origin header. */
export function ownOrigin(req: Pick<AuthenticatedRequest, 'protocol' | 'host' | 'headers'>): string {
  const host = req.host ?? (typeof req.headers.host === 'string' ? req.headers.host : '');
  return `${req.protocol}://${host}`;
}

const header = (req: AuthenticatedRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Every route but the public ones needs an identity: `Authorization: Bearer <key>`, or a web
 * console session cookie (see console-sessions.ts), which also passes the CSRF check on requests
 * that change state. A bearer key wins when both are sent. Roles are then checked by the table.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeyDirectory) private readonly keys: ApiKeyDirectory,
    @Inject(ConsoleSessions) private readonly sessions: ConsoleSessions,
    @Inject(AuthAttempts) private readonly attempts: AuthAttempts,
    @Inject(TRIAD_CONFIG) private readonly config: TriadConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (this.reflector.getAllAndOverride<boolean>(SIGNED_OUT_OK_KEY, targets) && header(req, 'authorization') === undefined) {
      try {
        req.identity = this.session(req);
      } catch (err) {
        // Nobody signed in (no cookie, or a session that ended): the route answers so, with no identity.
        if (!(err instanceof UnauthorizedException)) throw err;
      }
      return true;
    }
    const identity = await this.authenticate(req, context.switchToHttp().getResponse<{ setHeader(name: string, value: string): void }>());
    req.identity = identity;
    const roles = this.reflector.getAllAndOverride<HumanRole[] | undefined>(ROLES_KEY, targets);
    if (roles && roles.length > 0 && !hasRole(identity, ...roles)) {
      throw new ForbiddenException(`this action needs the role ${roles.join(' or ')}`);
    }
    return true;
  }

  /**
   * The identity of a request's key or session. A request with an API key is first checked against
   * its address's failed attempts (429 once they are used up), and a wrong key counts as one. A
   * session cookie is neither limited nor counted: its id is 256 random bits, nothing to guess, and
   * a browser whose session ended (signed out, expired) still sends it for a while — counting those
   * would lock its address out. A request with neither is refused without counting.
   */
  private async authenticate(req: AuthenticatedRequest, res: { setHeader(name: string, value: string): void }): Promise<Identity> {
    if (header(req, 'authorization') === undefined) return this.session(req);
    const address = req.ip ?? 'unknown';
    await this.attempts.refuseIfLimited(address, (name, value) => res.setHeader(name, value));
    try {
      return this.bearer(req);
    } catch (err) {
      if (err instanceof UnauthorizedException) await this.attempts.failed(address);
      throw err;
    }
  }

  private bearer(req: AuthenticatedRequest): Identity {
    const value = header(req, 'authorization');
    const match = value ? /^Bearer\s+(\S+)$/i.exec(value) : null;
    if (!match) throw new UnauthorizedException('an API key is required: Authorization: Bearer <key>');
    const identity = this.keys.authenticate(match[1]);
    if (!identity) throw new UnauthorizedException('the API key is not valid');
    return identity;
  }

  private session(req: AuthenticatedRequest): Identity {
    const sessionId = readCookie(req.headers.cookie, SESSION_COOKIE);
    if (sessionId === undefined) throw new UnauthorizedException('an API key is required: Authorization: Bearer <key>');
    const session = this.sessions.find(sessionId);
    // The key it was opened with must still be valid: a replaced key ends its sessions.
    const identity = session && this.keys.identityOfHash(session.keyHash);
    if (!session || !identity) {
      if (session) this.sessions.close(sessionId);
      throw new UnauthorizedException('the console session has expired or ended; sign in again');
    }
    const violation = csrfViolation({ method: req.method, origin: header(req, 'origin'), ownOrigin: ownOrigin(req), allowedHosts: this.config.http.allowedHosts, token: header(req, CSRF_HEADER), session });
    if (violation) throw new ForbiddenException(violation);
    req.consoleSession = { sessionId, session };
    return identity;
  }
}
