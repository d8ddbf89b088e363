import { randomBytes } from 'node:crypto';
import { hashSecret } from '../identity';

/** A new API key secret: `triad_` + 32 random bytes, base64url. */
export function newApiKeySecret(): string {
  return `triad_${randomBytes(32).toString('base64url')}`;
}

/** What is stored of a secret: its sha256, lowercase hex. */
export function secretHashOf(secret: string): string {
  return hashSecret(secret).toString('hex');
}
