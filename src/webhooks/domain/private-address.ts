/**
 * Which addresses a webhook may not reach unless its endpoint was added with `allowPrivate`:
 * loopback, private, link-local (cloud metadata at 169.254.169.254 included), unique-local,
 * carrier-grade NAT, unspecified, multicast and reserved ranges, in IPv4 and IPv6 — an IPv6 address
 * that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is judged by the IPv4 address it
 * carries. Pure: the shell resolves names and asks about each address.
 */

/** An IPv4 address as four numbers, or undefined when `text` is not one in dotted decimal. */
function ipv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return undefined;
  const n = parts.map(Number);
  return n.every((x) => x <= 255) ? n : undefined;
}

/** An IPv6 address as eight 16-bit groups (a trailing dotted IPv4 part included), or undefined. */
function ipv6(text: string): number[] | undefined {
  let t = text.toLowerCase();
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  let tail: number[] = [];
  const lastColon = t.lastIndexOf(':');
  if (t.slice(lastColon + 1).includes('.')) {
    const v4 = ipv4(t.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    t = `${t.slice(0, lastColon + 1)}0:0`;
  }
  const halves = t.split('::');
  if (halves.length > 2) return undefined;
  const group = (s: string) => (s === '' ? [] : s.split(':'));
  const head = group(halves[0]);
  const rest = halves.length === 2 ? group(halves[1]) : [];
  if (![...head, ...rest].every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  const fill = 8 - head.length - rest.length;
  if (halves.length === 1 ? fill !== 0 : fill < 0) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...rest].map((g) => parseInt(g, 16));
  if (tail.length) groups.splice(6, 2, ...tail);
  return groups.length === 8 ? groups : undefined;
}

/** Whether an IPv4 address lies in a range a webhook may not reach by default. */
function privateV4([a, b, c]: number[]): boolean {
  return (
    a === 0 || // "this network", 0.0.0.0
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224 // multicast, reserved, broadcast
  );
}

/** Whether an IPv6 address (eight groups) is one a webhook may not reach by default. */
function privateV6(g: number[]): boolean {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  if (zeroUpTo(8)) return true; // ::
  if (zeroUpTo(7) && g[7] === 1) return true; // ::1
  if (zeroUpTo(5) && g[5] === 0xffff) return privateV4(v4(g[6], g[7])); // ::ffff:a.b.c.d, mapped
  if (zeroUpTo(6)) return privateV4(v4(g[6], g[7])); // ::a.b.c.d, compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b) return privateV4(v4(g[6], g[7])); // NAT64
  if (g[0] === 0x2002) return privateV4(v4(g[1], g[2])); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return true; // fc00::/7 unique-local
  if ((g[0] & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g[0] & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (g[0] === 0x0100 && zeroUpTo(4)) return true; // discard-only 100::/64
  return false;
}

/**
 * Whether `address` (an IPv4 or IPv6 literal, brackets allowed) is private in the sense above.
 * Text that is no address at all counts as private: the caller refuses what it cannot judge.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, '$1');
  const v4 = ipv4(bare);
  if (v4) return privateV4(v4);
  const v6 = ipv6(bare);
  if (v6) return privateV6(v6);
  return true;
}
