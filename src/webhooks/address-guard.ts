import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { isPrivateAddress } from './domain/private-address';

/**
 * The SSRF rule at the network: a webhook host resolves, and every address it resolves to must be
 * public (domain/private-address.ts) unless its endpoint allows private ones. Checked when an
 * endpoint is added and again at each delivery, where the connection goes to the address that was
 * checked (a `lookup` for node:http), so a name whose DNS changes in between reaches no other.
 */

/** A host that may not be reached, with the reason (one line, naming no secret). */
export class WebhookAddressRefused extends Error {
  override name = 'WebhookAddressRefused';
}

export type Resolver = (host: string) => Promise<LookupAddress[]>;

/** Every address of `host`, by the system resolver (as node:http would connect). */
export const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * The address to connect to for `host`: an address literal itself, or the first a name resolves
 * to. Refused when the name does not resolve, or when any of its addresses is private and
 * `allowPrivate` is false (one private answer is enough to refuse: the resolver may pick it).
 */
export async function checkedAddress(host: string, allowPrivate: boolean, resolver: Resolver = systemResolver): Promise<LookupAddress> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(bare);
  let addresses: LookupAddress[];
  if (family !== 0) addresses = [{ address: bare, family }];
  else {
    try {
      addresses = await resolver(bare);
    } catch (err) {
      throw new WebhookAddressRefused(`${bare.slice(0, 253)} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (addresses.length === 0) throw new WebhookAddressRefused(`${bare.slice(0, 253)} does not resolve`);
  }
  if (!allowPrivate) {
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (refused) {
      throw new WebhookAddressRefused(
        `${bare.slice(0, 253)}${family === 0 ? ` resolves to ${refused.address}, which` : ''} is a private, loopback or link-local address: add the endpoint with allowPrivate (--allow-private) to reach it`,
      );
    }
  }
  return addresses[0];
}
