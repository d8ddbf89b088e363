/**
 * How triad's log lines look, framework-free: readable text on a terminal, one JSON object per line
 * otherwise (for log collectors), and never a secret — every line passes the redaction below.
 */

export type LogFormat = 'text' | 'json';

/** Fields a log call may carry; `runId`, `actor` and `event` where they are known. */
export type LogFields = Record<string, unknown>;

export interface LogRecord {
  level: string;
  context?: string;
  message: string;
  fields?: LogFields;
  time: Date;
}

/** The JSON line: time, level, context, msg, then the fields. */
export function jsonLine(record: LogRecord): string {
  return JSON.stringify({ time: record.time.toISOString(), level: record.level, ...(record.context ? { context: record.context } : {}), msg: record.message, ...record.fields });
}

const SECRET_PATTERNS: RegExp[] = [
  // Anthropic keys, triad's generated API keys, and any bearer credential quoted in a message.
  /sk-ant-[A-Za-z0-9_-]+/g,
  /\btriad_[A-Za-z0-9_-]{20,}/g,
  /(\bBearer\s+)[^\s"',;]+/gi,
];

/**
 * Replaces every known secret (the configured keys' values) and anything shaped like one with
 * `[redacted]`. Secrets shorter than 8 characters are not searched for (they would match words).
 */
export class Redactor {
  private readonly secrets: string[];
  /**
   * The secrets searched for in text and files that are not log lines (tool output, workspace
   * files): 12 characters or more, of two kinds of character at least. A shorter or plainer one
   * (`postgres`, `changeit`) would match ordinary words and rewrite users' files.
   */
  private readonly distinctive: string[];

  constructor(secrets: Iterable<string | undefined>) {
    this.secrets = [...new Set([...secrets].filter((s): s is string => typeof s === 'string' && s.length >= 8))].sort((a, b) => b.length - a.length);
    this.distinctive = this.secrets.filter(isDistinctive);
  }

  /**
   * The secrets of this process's environment: the Anthropic key, the TRIAD_API_KEYS secrets and
   * the passwords in the PostgreSQL and EventStoreDB URLs.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, more: readonly string[] = []): Redactor {
    const keys = (env.TRIAD_API_KEYS ?? '').split(',').map((entry) => entry.split(':').slice(2).join(':').trim());
    return new Redactor([env.ANTHROPIC_API_KEY, ...keys, ...urlPassword(env.TRIAD_PG_URL), ...urlPassword(env.TRIAD_ESDB_URL), env.PGPASSWORD, ...more]);
  }

  /** The distinctive known secrets only, not what is shaped like one: for text that is not a log line (a tool's output). */
  redactKnown(text: string): string {
    let out = text;
    for (const s of this.distinctive) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  }

  /** A copy of `bytes` with every distinctive known secret (as UTF-8) replaced, or undefined when none is there. */
  redactBytes(bytes: Buffer): Buffer | undefined {
    let out = bytes;
    let found = false;
    const mark = Buffer.from('[redacted]');
    for (const s of this.distinctive) {
      const needle = Buffer.from(s);
      let at = out.indexOf(needle);
      if (at < 0) continue;
      found = true;
      const parts: Buffer[] = [];
      let from = 0;
      while (at >= 0) {
        parts.push(out.subarray(from, at), mark);
        from = at + needle.length;
        at = out.indexOf(needle, from);
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return found ? out : undefined;
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join('[redacted]');
    for (const p of SECRET_PATTERNS) out = out.replace(p, (...m: unknown[]) => (typeof m[1] === 'string' ? `${m[1]}[redacted]` : '[redacted]'));
    return out;
  }
}

/** The password of a URL's authority (after the first ':' up to the last '@'), as written and decoded. */
function urlPassword(url: string | undefined): string[] {
  const authority = url?.match(/^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i)?.[1];
  const userinfo = authority?.includes('@') ? authority.slice(0, authority.lastIndexOf('@')) : undefined;
  const colon = userinfo?.indexOf(':') ?? -1;
  if (userinfo === undefined || colon < 0) return [];
  const raw = userinfo.slice(colon + 1);
  try {
    return [raw, decodeURIComponent(raw)];
  } catch {
    return [raw];
  }
}

/** 12 characters or more, of at least two kinds (lower case, upper case, digits, others). */
function isDistinctive(secret: string): boolean {
  if (secret.length < 12) return false;
  const kinds = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9]/].filter((kind) => kind.test(secret)).length;
  return kinds >= 2;
}
