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

/** The settings of `TRIAD_LOG_LEVEL`, least to most verbose: each writes its own level and the ones before it. */
export const LOG_LEVEL_SETTINGS = ['error', 'warn', 'log', 'debug'] as const;
export type LogLevelSetting = (typeof LOG_LEVEL_SETTINGS)[number];

/** The levels written at a setting (Nest's `fatal` goes with `error`, its `verbose` with `debug`). */
export function levelsAt(setting: LogLevelSetting): Array<'fatal' | LogLevelSetting | 'verbose'> {
  const upTo = LOG_LEVEL_SETTINGS.slice(0, LOG_LEVEL_SETTINGS.indexOf(setting) + 1);
  return ['fatal', ...upTo, ...(setting === 'debug' ? (['verbose'] as const) : [])];
}

/**
 * The framework's own start-up lines — every module loaded, every route mapped, about 60 of them —
 * say nothing an operator acts on: they are `debug`, so a start logs triad's one line.
 */
const FRAMEWORK_CONTEXTS: ReadonlySet<string> = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/** The level a line is written at: the caller's, except the framework's start-up lines, which are `debug`. */
export function effectiveLevel<L extends string>(level: L, context: string | undefined): L | 'debug' {
  return level === 'log' && context !== undefined && FRAMEWORK_CONTEXTS.has(context) ? 'debug' : level;
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
 * `[redacted]`. Secrets shorter than 8 characters are not searched for (they would match words;
 * the configuration refuses API keys that short).
 *
 * In text that is not a log line (tool output and input, model text, workspace files) each
 * secret is searched for in the forms a shell makes of it cheaply too: reversed (`rev`), as hex
 * (`xxd -p`, `od`), as base64 at each of its three alignments (`base64`, whatever came before it in
 * the stream), and spaced out (`sed 's/./& /g'`, with up to three separator characters between
 * its characters). The sandbox keeps a command from reading the server's secrets at all; this is
 * the second wall, for a secret that reached a command some other way.
 */
export class Redactor {
  private readonly secrets: string[];
  /** Every form of every secret, longest first, as exact strings. */
  private readonly forms: string[];
  /** The spaced-out forms, one pattern per secret and its reversal. */
  private readonly spaced: RegExp[];

  constructor(secrets: Iterable<string | undefined>) {
    this.secrets = [...new Set([...secrets].filter((s): s is string => typeof s === 'string' && s.length >= 8))].sort((a, b) => b.length - a.length);
    const forms = new Set<string>();
    const spaced: RegExp[] = [];
    for (const secret of this.secrets) {
      for (const form of encodedForms(secret)) forms.add(form);
      spaced.push(spacedPattern(secret), spacedPattern(reverse(secret)));
    }
    this.forms = [...forms].sort((a, b) => b.length - a.length);
    this.spaced = spaced;
  }

  /**
   * The secrets of this process's environment: the Anthropic and OpenAI keys, the TRIAD_API_KEYS secrets and
   * the passwords in the PostgreSQL and EventStoreDB URLs.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, more: readonly string[] = []): Redactor {
    const keys = (env.TRIAD_API_KEYS ?? '').split(',').map((entry) => entry.split(':').slice(2).join(':').trim());
    return new Redactor([env.ANTHROPIC_API_KEY, env.OPENAI_API_KEY, ...keys, ...urlPassword(env.TRIAD_PG_URL), ...urlPassword(env.TRIAD_ESDB_URL), env.PGPASSWORD, ...more]);
  }

  /** True when there is nothing to look for. */
  get empty(): boolean {
    return this.secrets.length === 0;
  }

  /** The known secrets in all their forms, not what is shaped like one: for text that is not a log line (a tool's output). */
  redactKnown(text: string): string {
    let out = text;
    for (const form of this.forms) if (out.includes(form)) out = out.split(form).join('[redacted]');
    for (const pattern of this.spaced) out = out.replace(pattern, '[redacted]');
    return out;
  }

  /** Every string in a JSON-like value passed through `redactKnown` (a copy; the value is not changed). */
  redactDeep<T>(value: T): T {
    if (typeof value === 'string') return this.redactKnown(value) as T;
    if (Array.isArray(value)) return value.map((v: unknown) => this.redactDeep(v)) as T;
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = this.redactDeep(v);
      return out as T;
    }
    return value;
  }

  /** A copy of `bytes` with every known secret's forms (as UTF-8) replaced, or undefined when none is there. */
  redactBytes(bytes: Buffer): Buffer | undefined {
    if (this.secrets.length === 0) return undefined;
    // Latin-1 maps each byte to one character and back: the search runs on bytes that need not be UTF-8.
    const text = bytes.toString('latin1');
    let out = text;
    for (const form of this.forms) {
      const needle = Buffer.from(form, 'utf8').toString('latin1');
      if (out.includes(needle)) out = out.split(needle).join('[redacted]');
    }
    for (const pattern of this.spaced) out = out.replace(pattern, '[redacted]');
    return out === text ? undefined : Buffer.from(out, 'latin1');
  }

  redact(text: string): string {
    let out = this.redactKnown(text);
    for (const p of SECRET_PATTERNS) out = out.replace(p, (...m: unknown[]) => (typeof m[1] === 'string' ? `${m[1]}[redacted]` : '[redacted]'));
    return out;
  }
}

function reverse(text: string): string {
  return [...text].reverse().join('');
}

/** The secret as it is, reversed, as hex, and the parts of its base64 that do not depend on its alignment. */
function encodedForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [secret, reverse(secret), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
  for (let k = 0; k < 3; k++) {
    const whole = Math.floor((bytes.length - k) / 3) * 3;
    if (whole < 6) continue;
    const core = bytes.subarray(k, k + whole);
    forms.push(core.toString('base64'), core.toString('base64url'));
  }
  return forms;
}

/** The secret's characters with 1 to 3 spaces, dots, dashes or other separators between each. */
function spacedPattern(secret: string): RegExp {
  const chars = [...secret].map((c) => c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&'));
  return new RegExp(chars.join('[\\s.,:;_|/\\\\-]{1,3}'), 'g');
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
