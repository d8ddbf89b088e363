import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKeyEntry } from '../config/config';
import { normaliseName } from './names';

import type { HumanRole } from './roles';

export type { HumanRole };

export interface Identity {
  /** `user:<name>` */
  id: string;
  name: string;
  roles: HumanRole[];
}

export function hasRole(identity: Identity, ...allowed: HumanRole[]): boolean {
  return identity.roles.includes('admin') || allowed.some((r) => identity.roles.includes(r));
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Where a key comes from: the TRIAD_API_KEYS environment, or the event store (`triad keys add`). */
export type ApiKeySource = 'env' | 'store';

interface StoredKey {
  name: string;
  roles: HumanRole[];
  hash: Buffer;
  source: ApiKeySource;
}

/**
 * API keys, held only as sha256 hashes and compared in constant time. Bootstrapped from
 * TRIAD_API_KEYS; more keys are added at run time from the store (see `triad keys add` and
 * `StoredApiKeys`). A name has at most one key per source: a stored key replaces the stored key
 * of the same name, never the one configured in the environment.
 */
export class ApiKeyDirectory {
  private readonly keys: StoredKey[] = [];

  constructor(entries: ApiKeyEntry[] = []) {
    for (const e of entries) this.addHashed(e.name, e.roles as HumanRole[], hashSecret(e.secret));
  }

  /** `name` is normalised here too: keys stored before names were normalised act as the same identity. */
  addHashed(given: string, roles: HumanRole[], hash: Buffer, source: ApiKeySource = 'env'): void {
    const name = normaliseName(given);
    const existing = this.keys.findIndex((k) => k.name === name && k.source === source);
    if (existing >= 0) this.keys.splice(existing, 1);
    this.keys.push({ name, roles, hash, source });
  }

  get size(): number {
    return this.keys.length;
  }

  authenticate(secret: string): Identity | undefined {
    return this.identityOfHash(hashSecret(secret));
  }

  /** The identity a name's key gives (the last one added, as `authenticate` would give it), or undefined when the name has no key. */
  identityOf(given: string): Identity | undefined {
    const name = normaliseName(given);
    let found: StoredKey | undefined;
    for (const k of this.keys) if (k.name === name) found = k;
    return found ? { id: `user:${found.name}`, name: found.name, roles: found.roles } : undefined;
  }

  /** The identity of the key with this sha256, as it is now (a console session re-checks its key on every request). */
  identityOfHash(hash: Buffer): Identity | undefined {
    let found: StoredKey | undefined;
    for (const k of this.keys) if (timingSafeEqual(k.hash, hash)) found = k;
    return found ? { id: `user:${found.name}`, name: found.name, roles: found.roles } : undefined;
  }
}
