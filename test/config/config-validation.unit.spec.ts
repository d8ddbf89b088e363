import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseApiKeys } from '../../src/config/config';
import { checkEsdbUrlOptions, redactEsdbUrl } from '../../src/events/esdb.client';
import { parseMcpConfig } from '../../src/team/tools/mcp/mcp-config';

// Configuration is refused as a whole, in one message that echoes no secret, before anything
// is opened: values a library would read differently (a port in hex, a URL that is not one), or
// that a timer would turn into a busy loop, never reach it.

const BASE = { TRIAD_DATA_DIR: '/tmp/triad-config-test' };
const load = (env: Record<string, string>) => loadConfig({ ...BASE, ...env });
const refused = (env: Record<string, string>) => {
  try {
    load(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(env)}`);
};

describe('configuration values', () => {
  it('given a port that is not decimal digits from 0 to 65535, then it is refused', () => {
    for (const bad of [' ', '\t', '0x9537', '1e3', '+80', '0b11', '3000 ', '65536', '-1', '99999999999999999999']) {
      expect(refused({ TRIAD_PORT: bad })).toMatch(/^TRIAD_PORT must be a port number from 0 to 65535/);
    }
    expect(load({ TRIAD_PORT: '8080' }).port).toBe(8080);
    expect(load({ TRIAD_PORT: '0' }).port).toBe(0);
  });

  it('given a host that is neither an address nor a host name, then it is refused', () => {
    for (const bad of [' ', '127.0.0.1:80', 'a b', 'my_host', 'http://x', '-x']) expect(refused({ TRIAD_HOST: bad })).toMatch(/^TRIAD_HOST must be/);
    for (const good of ['127.0.0.1', '::1', '0.0.0.0', 'localhost', 'db.example.com']) expect(load({ TRIAD_HOST: good, TRIAD_ALLOWED_HOSTS: 'triad.example' }).host).toBe(good);
  });

  it('given a loopback bind and no TRIAD_ALLOWED_HOSTS, then the names of this machine are allowed', () => {
    expect(load({}).http.allowedHosts).toEqual(['127.0.0.1', 'localhost', '[::1]']);
    expect(load({ TRIAD_HOST: '::1' }).http.allowedHosts).toEqual(['[::1]', 'localhost', '127.0.0.1']);
    expect(load({ TRIAD_HOST: 'localhost' }).http.allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
  });

  it('given a bind beyond this machine and no TRIAD_ALLOWED_HOSTS, then it is refused', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'triad.example']) expect(refused({ TRIAD_HOST: host })).toMatch(/serves beyond this machine: set TRIAD_ALLOWED_HOSTS/);
  });

  it('given TRIAD_ALLOWED_HOSTS, then its names are normalised, * stands alone, and a port or a URL is refused', () => {
    expect(load({ TRIAD_HOST: '0.0.0.0', TRIAD_ALLOWED_HOSTS: 'Triad.Example., ::1 , 10.0.0.1' }).http.allowedHosts).toEqual(['triad.example', '[::1]', '10.0.0.1']);
    expect(load({ TRIAD_HOST: '0.0.0.0', TRIAD_ALLOWED_HOSTS: '*' }).http.allowedHosts).toEqual(['*']);
    expect(refused({ TRIAD_ALLOWED_HOSTS: '*,triad.example' })).toMatch(/takes no other entry/);
    for (const bad of ['triad.example:3000', 'http://triad.example', 'a b', '-x']) expect(refused({ TRIAD_ALLOWED_HOSTS: bad })).toMatch(/^TRIAD_ALLOWED_HOSTS takes host names/);
  });

  it('given edge time limits, then headers may not take longer than the whole request, and a short metrics key is refused unechoed', () => {
    expect(load({}).http).toMatchObject({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, authFailuresPerWindow: 10, authFailureWindowMs: 60_000 });
    expect(refused({ TRIAD_HEADERS_TIMEOUT_MS: '40000' })).toMatch(/may not be longer than TRIAD_REQUEST_TIMEOUT_MS/);
    const short = refused({ TRIAD_METRICS_KEY: 'short-secret' });
    expect(short).toMatch(/TRIAD_METRICS_KEY must be at least 16/);
    expect(short).not.toContain('short-secret');
  });

  it('given intervals and lifetimes past what a timer can wait, then they are refused', () => {
    expect(refused({ TRIAD_LEASE_TTL_MS: '8600000000' })).toMatch(/TRIAD_LEASE_TTL_MS must be a whole number from 100 to 86400000/);
    expect(refused({ TRIAD_RECOVERY_INTERVAL_MS: '2147483648' })).toMatch(/from 0 to 2147483647/);
    expect(refused({ TRIAD_REVIEW_TIMER_MS: '2147483648' })).toMatch(/from 0 to 2147483647/);
    expect(refused({ TRIAD_OFFLINE_LATENCY_MS: '2147483648' })).toMatch(/from 0 to 2147483647/);
    expect(refused({ TRIAD_SESSION_TTL_MS: '9007199254740991' })).toMatch(/TRIAD_SESSION_TTL_MS must be a whole number from 1000 to 31536000000/);
    expect(load({ TRIAD_RECOVERY_INTERVAL_MS: '2147483647', TRIAD_LEASE_TTL_MS: '86400000' }).leaseTtlMs).toBe(86_400_000);
  });

  it('given a model idle timeout, then it is 1 s to 5 min (Node\'s HTTP client ends a silent body at 5 min), 5 min by default', () => {
    expect(load({}).modelIdleTimeoutMs).toBe(300_000);
    expect(load({ TRIAD_MODEL_IDLE_TIMEOUT_MS: '60000' }).modelIdleTimeoutMs).toBe(60_000);
    expect(refused({ TRIAD_MODEL_IDLE_TIMEOUT_MS: '600000' })).toMatch(/TRIAD_MODEL_IDLE_TIMEOUT_MS must be a whole number from 1000 to 300000/);
    expect(refused({ TRIAD_MODEL_IDLE_TIMEOUT_MS: '10' })).toMatch(/from 1000 to 300000/);
  });

  it('given a PostgreSQL URL or schema that is not one, then it is refused without the password', () => {
    const pg = (url: string, extra: Record<string, string> = {}) => refused({ TRIAD_STORE: 'postgres', TRIAD_PG_URL: url, ...extra });
    expect(pg('not a url')).toBe('TRIAD_PG_URL is not a URL (postgres://user:password@host:5432/database)');
    expect(pg(' ')).toMatch(/TRIAD_PG_URL is not a URL/);
    expect(pg('postgres://u:s3cretpw@h:99999/db')).not.toMatch(/s3cretpw/);
    expect(pg('postgres://u:s3cretpw@h:abc/db')).not.toMatch(/s3cretpw/);
    expect(pg('mysql://u:s3cretpw@h/db')).toBe("TRIAD_PG_URL must start with postgres:// or postgresql://, got 'mysql://…'");
    const ok = 'postgres://postgres@127.0.0.1:5432/test';
    for (const schema of ['x;drop', 'a b', '1abc', 'information_schema', 'pg_catalog', 'PG_toast']) expect(pg(ok, { TRIAD_PG_SCHEMA: schema })).toMatch(/^TRIAD_PG_SCHEMA /);
    expect(load({ TRIAD_STORE: 'postgres', TRIAD_PG_URL: ok, TRIAD_PG_SCHEMA: 'triad_a' }).pgSchema).toBe('triad_a');
  });

  it('given a proxy setting Express would not read, a blank data directory, or a Messages API URL that is not http, then they are refused', () => {
    for (const bad of ['foo', '10.0.0.0/99', '10.0.0.1/255.255.0.0/1', 'loopback,nope']) expect(refused({ TRIAD_TRUST_PROXY: bad })).toMatch(/^TRIAD_TRUST_PROXY must be/);
    for (const good of ['loopback', '10.0.0.0/8, ::1', 'linklocal,uniquelocal', '192.168.0.0/255.255.0.0', '2', 'true']) expect(() => load({ TRIAD_TRUST_PROXY: good })).not.toThrow();
    expect(refused({ TRIAD_DATA_DIR: '  ' })).toBe('TRIAD_DATA_DIR is blank');
    expect(refused({ ANTHROPIC_BASE_URL: 'not a url' })).toMatch(/^ANTHROPIC_BASE_URL must be an http:\/\/ or https:\/\/ URL/);
    expect(refused({ ANTHROPIC_BASE_URL: 'ftp://u:pw123456@x/' })).not.toMatch(/pw123456/);
    expect(refused({ ANTHROPIC_API_KEY: ' ' })).toBe('ANTHROPIC_API_KEY holds whitespace (a key has none)');
    expect(load({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999' }).anthropicBaseUrl).toBe('http://127.0.0.1:9999');
  });

  it('given TRIAD_MODEL=openai, then it needs a key or a base URL; OPENAI_BASE_URL is an http URL without credentials; the key is never echoed', () => {
    expect(refused({ TRIAD_MODEL: 'gpt' })).toBe("TRIAD_MODEL must be offline, anthropic or openai, got 'gpt'");
    expect(refused({ TRIAD_MODEL: 'openai' })).toBe('TRIAD_MODEL=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a server that takes no key');
    expect(load({ TRIAD_MODEL: 'openai', OPENAI_API_KEY: 'sk-openai-0123456789' })).toMatchObject({ model: 'openai', openaiApiKey: 'sk-openai-0123456789' });
    expect(load({ TRIAD_MODEL: 'openai', OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' })).toMatchObject({ model: 'openai', openaiBaseUrl: 'http://127.0.0.1:11434/v1' });
    expect(refused({ OPENAI_API_KEY: 'sk-openai 0123456789' })).toBe('OPENAI_API_KEY holds whitespace (a key has none)');
    expect(refused({ OPENAI_BASE_URL: 'localhost:11434' })).toMatch(/^OPENAI_BASE_URL must be an http:\/\/ or https:\/\/ URL/);
    // Credentials are read as the URL parser reads them, so the forms without slashes count too.
    for (const url of ['https://u:sk-openai-secret-99@proxy.example/v1', 'https:u:sk-openai-secret-99@proxy.example/v1', 'https:\\\\u:sk-openai-secret-99@proxy.example/v1', 'http://sk-openai-secret-99@proxy.example']) {
      const message = refused({ OPENAI_BASE_URL: url });
      expect(message).toBe('OPENAI_BASE_URL must not carry credentials: set OPENAI_API_KEY');
      expect(message).not.toContain('sk-openai-secret-99');
    }
    expect(refused({ ANTHROPIC_BASE_URL: 'https:user:sk-ant-secret-99@proxy.example' })).toBe('ANTHROPIC_BASE_URL must not carry credentials: set ANTHROPIC_API_KEY');
    // Set up beside the default, not instead of it: only TRIAD_MODEL=openai makes it the default.
    expect(load({ OPENAI_API_KEY: 'sk-openai-0123456789' }).model).toBe('offline');
    expect(load({ OPENAI_API_KEY: 'sk-openai-0123456789', ANTHROPIC_API_KEY: 'sk-ant-0123456789' }).model).toBe('anthropic');
  });

  it('echoes values without control characters', () => {
    expect(refused({ TRIAD_STORE: 'sqlite\r\nX' })).toBe("TRIAD_STORE must be sqlite, postgres, esdb or memory, got 'sqlite??X'");
  });
});

describe('API keys in the environment', () => {
  it('given a secret in the place of a role or a name, then the message does not echo it', () => {
    for (const text of ['alice:S3CRETVALUEXYZ:admin', 'alice:reviewer+S3CRETVALUEXYZ:xxxxxxxxxx', 'S3CRET VALUEXYZ:admin:xxxxxxxxxx']) {
      expect(() => parseApiKeys(text)).toThrow(ConfigError);
      expect(() => parseApiKeys(text)).not.toThrow(/S3CRET/);
    }
  });

  it('given two entries with one secret, then they are refused (the key would sign in as only one of them)', () => {
    expect(() => parseApiKeys('alice:reviewer:SAMESECRET123,bob:admin:SAMESECRET123')).toThrow("TRIAD_API_KEYS entries 'alice' and 'bob' have the same secret: each key needs its own");
  });
});

describe('EventStoreDB connection strings', () => {
  it('given an option the client would ignore or not support, then it is refused without the URL', () => {
    expect(() => checkEsdbUrlOptions('esdb://admin:s3cretpw@127.0.0.1:1?tls=false&bogus=1')).toThrow(/^unknown option 'bogus'/);
    expect(() => checkEsdbUrlOptions('esdb://admin:s3cretpw@127.0.0.1:1?tls=false&bogus=1')).not.toThrow(/s3cretpw/);
    expect(() => checkEsdbUrlOptions('esdb://h:2113?tlsVerifyCert=false')).toThrow(/tlsVerifyCert=false is not supported/);
    expect(() => checkEsdbUrlOptions('esdb://h:2113?tls=false&defaultDeadline=5000&keep-alive-interval=1&MaxDiscoverAttempts=3')).not.toThrow();
  });

  it('hides the whole password, an @ in it included', () => {
    expect(redactEsdbUrl('esdb://admin:s3cr@tpw@db:2113?tls=false')).toBe('esdb://***@db:2113?tls=false');
  });
});

describe('MCP servers file', () => {
  it('given text that is not JSON, then the message says so without quoting it (it may hold a token)', () => {
    expect(() => parseMcpConfig('{"mcpServers": {"gh": {"env": {"GITHUB_TOKEN": ghp_SuperSecret}}}}', 'f.json')).toThrow(/^is not JSON \(a syntax error/);
    expect(() => parseMcpConfig('{"mcpServers": {"gh": {"env": {"GITHUB_TOKEN": ghp_SuperSecret}}}}', 'f.json')).not.toThrow(/ghp_/);
    // A server named twice would be the last one's to triad and the first one's to a reader.
    expect(() => parseMcpConfig('{"mcpServers": {"gh": {"command": "/bin/a"}, "gh": {"command": "/bin/b"}}}', 'f.json')).toThrow('the file.mcpServers.gh is given twice; a key may appear once in an object');
  });
});

describe("the operator's price rows (TRIAD_MODEL_PRICES)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'triad-prices-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('given a file of rows, then they are read: input and output required, the cache prices and the window optional', () => {
    const path = file('ok.json', JSON.stringify({ 'qwen2.5-coder': { input: 0, output: 0 }, 'my-gpt': { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25, contextTokens: 32768 } }));
    expect(load({ TRIAD_MODEL_PRICES: path }).modelPrices).toEqual({ 'qwen2.5-coder': { input: 0, output: 0 }, 'my-gpt': { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 1.25, contextTokens: 32768 } });
    expect(load({}).modelPrices).toBeUndefined();
  });

  it('given a bad file, then it is refused in one line naming the file and the row', () => {
    expect(refused({ TRIAD_MODEL_PRICES: join(dir, 'missing.json') })).toMatch(/^TRIAD_MODEL_PRICES .*missing\.json: cannot be read \(no such file\)$/);
    expect(refused({ TRIAD_MODEL_PRICES: file('nojson.json', '{') })).toMatch(/: is not JSON$/);
    expect(refused({ TRIAD_MODEL_PRICES: file('list.json', '[]') })).toMatch(/: must be an object of model ids/);
    expect(refused({ TRIAD_MODEL_PRICES: file('twice.json', '{"m":{"input":1,"output":1},"m":{"input":2,"output":2}}') })).toMatch(/given twice/);
    expect(refused({ TRIAD_MODEL_PRICES: file('noout.json', '{"m":{"input":1}}') })).toMatch(/: 'm'\.output must be a price in USD per million tokens, 0 to 10000$/);
    expect(refused({ TRIAD_MODEL_PRICES: file('neg.json', '{"m":{"input":-1,"output":1}}') })).toMatch(/'m'\.input must be a price/);
    expect(refused({ TRIAD_MODEL_PRICES: file('str.json', '{"m":{"input":"1","output":1}}') })).toMatch(/'m'\.input must be a price/);
    expect(refused({ TRIAD_MODEL_PRICES: file('huge.json', '{"m":{"input":1e9,"output":1}}') })).toMatch(/'m'\.input must be a price/);
    expect(refused({ TRIAD_MODEL_PRICES: file('window.json', '{"m":{"input":1,"output":1,"contextTokens":1.5}}') })).toMatch(/'m'\.contextTokens must be a whole number of tokens/);
    expect(refused({ TRIAD_MODEL_PRICES: file('extra.json', '{"m":{"input":1,"output":1,"inputt":2}}') })).toMatch(/'m' has 'inputt'; a row takes input, output, cacheRead, cacheWrite, contextTokens$/);
    expect(refused({ TRIAD_MODEL_PRICES: file('name.json', '{"bad name":{"input":1,"output":1}}') })).toMatch(/'bad name' is not a model id/);
  });
});
