import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Identity } from './identity';
import { originAllowed } from '../http/edge';

/**
 * Web console sessions: an API key is exchanged once (`POST /v1/session`) for a random session id
 * held in an HttpOnly, SameSite=Strict cookie, and a CSRF token the page sends back in a header on
 * every state-changing request (a synchroniser token: the server keeps it with the session, so a
 * cookie set by another site cannot forge it). Sessions live in this process's memory: they end
 * with it, and processes behind one load balancer need sticky routing (docs/CONSOLE.md).
 *
 * Only the sha256 of a session id is kept, and the sha256 of the API key it was opened with, so
 * a key that is replaced or removed ends its sessions at their next request.
 */

export const SESSION_COOKIE = 'triad_session';
export const CSRF_HEADER = 'x-csrf-token';
/** Default lifetime of a console session: 8 hours from sign-in (`TRIAD_SESSION_TTL_MS`). */
export const DEFAULT_SESSION_TTL_MS = 8 * 60 * 60 * 1000;
/** Beyond this many live sessions in one process, the oldest is ended to make room. */
export const MAX_SESSIONS = 10_000;

export interface ConsoleSession {
  identity: Identity;
  /** sha256 of the API key the session was opened with. */
  keyHash: Buffer;
  csrfToken: string;
  openedAt: number;
  expiresAt: number;
}

/** What `GET/POST /v1/session` answer: who, until when, and the token for state-changing requests. */
export type SessionView = SignedInView | { signedIn: false };

export interface SignedInView {
  signedIn: true;
  identity: Identity;
  /** Absent when the request was authenticated with a bearer key. */
  csrfToken?: string;
  expiresAt?: string;
}

export interface OpenedSession {
  sessionId: string;
  csrfToken: string;
  expiresAt: number;
}

const digest = (id: string): string => createHash('sha256').update(id).digest('hex');

export class ConsoleSessions {
  /** By digest of the session id, in opening order (Map keeps insertion order: the oldest first). */
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    readonly ttlMs: number = DEFAULT_SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
    private readonly maxSessions: number = MAX_SESSIONS,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  open(identity: Identity, keyHash: Buffer): OpenedSession {
    const at = this.now();
    this.sweep(at);
    while (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
    const sessionId = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const expiresAt = at + this.ttlMs;
    this.sessions.set(digest(sessionId), { identity, keyHash, csrfToken, openedAt: at, expiresAt });
    return { sessionId, csrfToken, expiresAt };
  }

  /** The live session of this id; an expired one is ended and not returned. */
  find(sessionId: string): ConsoleSession | undefined {
    const key = digest(sessionId);
    const session = this.sessions.get(key);
    if (!session) return undefined;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return session;
  }

  close(sessionId: string): boolean {
    return this.sessions.delete(digest(sessionId));
  }

  private sweep(at: number): void {
    for (const [key, s] of this.sessions) if (s.expiresAt <= at) this.sessions.delete(key);
  }
}

/** Constant-time comparison of the CSRF token a request sent with its session's. */
export function csrfTokenMatches(sent: string | undefined, expected: string): boolean {
  if (sent === undefined) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface CsrfCheckInput {
  method: string;
  /** The request's Origin header, if any. */
  origin: string | undefined;
  /** This server's own origin as the request reached it (`https://host:port`). */
  ownOrigin: string;
  /** The hosts this server answers for (TRIAD_ALLOWED_HOSTS). */
  allowedHosts: readonly string[];
  /** The CSRF header's value, if any. */
  token: string | undefined;
  session: Pick<ConsoleSession, 'csrfToken'>;
}

/**
 * Whether a browser's Origin is this server's: an allowed host (a page whose name was made to
 * resolve here sends its own name), with the scheme and port the request reached triad by.
 */
export function sameOrigin(origin: string, ownOrigin: string, allowedHosts: readonly string[]): boolean {
  return origin === ownOrigin && originAllowed(origin, allowedHosts);
}

/**
 * Why a cookie-authenticated request is refused as a possible cross-site request, or undefined
 * when it may go on. Reads are never refused (SameSite=Strict keeps the cookie off other sites'
 * requests, and CORS keeps their answers from other sites' pages). A state-changing request must
 * carry the session's CSRF token, and an Origin, when the browser sends one, must be this server's.
 */
export function csrfViolation(input: CsrfCheckInput): string | undefined {
  if (!STATE_CHANGING.has(input.method.toUpperCase())) return undefined;
  if (input.origin !== undefined && !sameOrigin(input.origin, input.ownOrigin, input.allowedHosts)) return 'the request comes from another origin';
  if (!csrfTokenMatches(input.token, input.session.csrfToken)) return `a console request that changes state needs the session's ${CSRF_HEADER} header`;
  return undefined;
}

/**
 * The value of one cookie from a Cookie header (RFC 6265 `name=value; name2=value2`), or undefined.
 * A hand-written reader of one name: the session id is base64url, so no decoding is needed.
 */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (!text) return undefined;
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    return value === '' ? undefined : value;
  }
  return undefined;
}
