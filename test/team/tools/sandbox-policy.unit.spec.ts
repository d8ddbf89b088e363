import { bubblewrapArgs, hostAllowed, limitHit, parseHostPattern, parseNetworkAllowList, passedEnvProblem, DEFAULT_SANDBOX_LIMITS } from '../../../src/team/tools/sandbox/sandbox-policy';

describe('network allow-lists', () => {
  const list = (entries: string[]) => {
    const parsed = parseNetworkAllowList(entries, 'network');
    if ('problem' in parsed) throw new Error(parsed.problem);
    return parsed.patterns;
  };

  it('given a host name, then it and only it is allowed, on 80 and 443', () => {
    const p = list(['registry.npmjs.org']);
    expect(hostAllowed(p, 'registry.npmjs.org', 443)).toBe(true);
    expect(hostAllowed(p, 'REGISTRY.npmjs.org.', 80)).toBe(true);
    expect(hostAllowed(p, 'registry.npmjs.org', 22)).toBe(false);
    expect(hostAllowed(p, 'evil-registry.npmjs.org', 443)).toBe(false);
    expect(hostAllowed(p, 'registry.npmjs.org.evil.example', 443)).toBe(false);
  });

  it('given a wildcard, then sub-domains are allowed but not the domain itself', () => {
    const p = list(['*.github.com']);
    expect(hostAllowed(p, 'api.github.com', 443)).toBe(true);
    expect(hostAllowed(p, 'github.com', 443)).toBe(false);
    expect(hostAllowed(p, 'notgithub.com', 443)).toBe(false);
  });

  it('given an address with a port, then only that port', () => {
    const p = list(['127.0.0.1:8080', '[::1]:9090']);
    expect(hostAllowed(p, '127.0.0.1', 8080)).toBe(true);
    expect(hostAllowed(p, '127.0.0.1', 80)).toBe(false);
    expect(hostAllowed(p, '::1', 9090)).toBe(true);
    expect(hostAllowed(p, '[::1]', 9090)).toBe(true);
  });

  it('refuses what is not a host', () => {
    for (const bad of ['', 'a b', 'http://x', '*.', '*.1.2.3.4', 'x:0', '-a.com']) expect(typeof parseHostPattern(bad)).toBe('string');
    expect(parseNetworkAllowList(Array.from({ length: 51 }, (_, i) => `h${i}.example`), 'n')).toEqual({ problem: 'n may hold at most 50 hosts' });
  });
});

describe('the sandbox environment', () => {
  it('refuses to pass on names that look like secrets or triad configuration', () => {
    for (const name of ['TRIAD_API_KEYS', 'ANTHROPIC_API_KEY', 'GITHUB_TOKEN', 'DB_PASSWORD', 'PGPASSWORD', 'AWS_PROFILE']) expect(passedEnvProblem(name)).toBeDefined();
    expect(passedEnvProblem('NPM_CONFIG_REGISTRY')).toBeUndefined();
  });
});

describe("bubblewrap's arguments", () => {
  const system = { paths: ['/usr'], etc: ['hosts'], symlinks: [{ path: '/bin', target: 'usr/bin' }] };
  const args = bubblewrapArgs({ writable: ['/tmp/ws'], readOnly: ['/srv/docs'], cwd: '/tmp/ws', env: { PATH: '/usr/bin' }, system });

  it('unshares every namespace, drops capabilities and dies with its parent', () => {
    for (const flag of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session']) expect(args).toContain(flag);
    expect(args.join(' ')).toContain('--cap-drop ALL');
  });

  it('binds the workspace after the private /tmp, so a workspace under /tmp is the real one', () => {
    expect(args.indexOf('--bind')).toBeGreaterThan(args.lastIndexOf('--tmpfs'));
    expect(args.join(' ')).toContain('--ro-bind /srv/docs /srv/docs');
    expect(args.join(' ')).toContain('--clearenv --setenv PATH /usr/bin');
  });
});

describe('limits reported to the agent', () => {
  it('names the limit a command hit', () => {
    const l = DEFAULT_SANDBOX_LIMITS;
    expect(limitHit(l, { code: 152, signal: null })).toMatch(/CPU time limit of 300 s/);
    expect(limitHit(l, { code: 153, signal: null })).toMatch(/file larger than its limit of 512 MiB/);
    expect(limitHit(l, { code: 0, signal: null, pidsHit: true })).toMatch(/limit of 256 processes/);
    expect(limitHit(l, { code: null, signal: 'SIGKILL', memoryHit: true })).toMatch(/memory limit of 2 GiB/);
    expect(limitHit(l, { code: null, signal: 'SIGKILL', outputHit: true })).toMatch(/output limit of 16 MiB/);
    expect(limitHit(l, { code: 1, signal: null })).toBeUndefined();
  });
});
