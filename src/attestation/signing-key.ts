import { generateKeyPairSync } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Signer } from './attestation';

export class SigningKeyError extends Error {
  override readonly name = 'SigningKeyError';
}

/**
 * The server's signing key from its file, made there on first start. The file is private (0600 in
 * a 0700 directory) and refused when others may read it, as ssh refuses a private key. Two
 * processes starting at once on a new machine end with one key: the file is written aside and
 * linked into place, and whoever links second reads the first one's key.
 */
export function loadOrCreateSigningKey(file: string): { signer: Signer; created: boolean } {
  const existing = readKey(file);
  if (existing) return { signer: existing, created: false };
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const aside = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(aside, pem, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SigningKeyError(`cannot write the signing key to ${file}: ${(err as Error).message}`);
    // Another process made it first: its key is the one.
  } finally {
    rmSync(aside, { force: true });
  }
  const made = readKey(file);
  if (!made) throw new SigningKeyError(`the signing key ${file} vanished while it was made`);
  return { signer: made, created: true };
}

function readKey(file: string): Signer | undefined {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SigningKeyError(`cannot read the signing key ${file}: ${(err as Error).message}`);
  }
  if ((mode & 0o077) !== 0) {
    throw new SigningKeyError(`the signing key ${file} is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  }
  try {
    return Signer.fromPem(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SigningKeyError(`${file} holds no Ed25519 private key (PKCS#8 PEM): ${(err as Error).message}`);
  }
}
