import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/**
 * SSH signatures (OpenSSH's PROTOCOL.sshsig, what `ssh-keygen -Y sign` writes) checked with node's
 * crypto. Pure.
 *
 * Why triad's own: verifying needs no OpenSSH on the auditor's machine (a bundle is checked
 * anywhere node runs), and no maintained npm package reads SSHSIG; the format is a fixed envelope
 * of length-prefixed strings around a signature node verifies itself. Keys: ssh-ed25519,
 * ecdsa-sha2-nistp256/384/521 and ssh-rsa (signatures rsa-sha2-256/512). FIDO keys (sk-*) are not
 * read: their signatures cannot be checked here without the device's attestation format.
 */

const MAGIC = Buffer.from('SSHSIG');
const ARMOR = /-----BEGIN SSH SIGNATURE-----([\s\S]*?)-----END SSH SIGNATURE-----/;

class Reader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  bytes(n: number): Buffer {
    if (this.at + n > this.buf.length) throw new SshFormatError('truncated');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  uint32(): number {
    return this.bytes(4).readUInt32BE(0);
  }
  string(): Buffer {
    return this.bytes(this.uint32());
  }
  get done(): boolean {
    return this.at === this.buf.length;
  }
}

class SshFormatError extends Error {
  override readonly name = 'SshFormatError';
}

const sshString = (b: Buffer): Buffer => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length, 0);
  return Buffer.concat([len, b]);
};

interface SshSig {
  publicKey: Buffer;
  namespace: string;
  reserved: Buffer;
  hashAlgorithm: string;
  sigType: string;
  sigBlob: Buffer;
}

function parseSshSig(armored: string): SshSig {
  const m = ARMOR.exec(armored);
  if (!m) throw new SshFormatError('not an armored SSH signature');
  const r = new Reader(Buffer.from(m[1].replace(/\s+/g, ''), 'base64'));
  if (!r.bytes(6).equals(MAGIC)) throw new SshFormatError('no SSHSIG preamble');
  if (r.uint32() !== 1) throw new SshFormatError('unknown SSHSIG version');
  const publicKey = r.string();
  const namespace = r.string().toString('utf8');
  const reserved = r.string();
  const hashAlgorithm = r.string().toString('utf8');
  const sig = new Reader(r.string());
  if (!r.done) throw new SshFormatError('trailing bytes');
  const sigType = sig.string().toString('utf8');
  const sigBlob = sig.string();
  return { publicKey, namespace, reserved, hashAlgorithm, sigType, sigBlob };
}

/** The public key blob of an authorized_keys line (`ssh-ed25519 AAAA… comment`). */
export function sshPublicKeyBlob(line: string): Buffer {
  const parts = line.trim().split(/\s+/);
  if (parts.length < 2) throw new SshFormatError('not an SSH public key line (type, base64, comment)');
  const blob = Buffer.from(parts[1], 'base64');
  const type = new Reader(blob).string().toString('utf8');
  if (type !== parts[0]) throw new SshFormatError('the key type does not match its blob');
  return blob;
}

/** `SHA256:<base64>`, as `ssh-keygen -l` prints a key's fingerprint. */
export function fingerprintOfBlob(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The fingerprint of an SSH public key line, or undefined when it is not one triad reads. */
export function sshLineFingerprint(line: string): string | undefined {
  try {
    const blob = sshPublicKeyBlob(line);
    nodeKey(blob);
    return fingerprintOfBlob(blob);
  } catch (err) {
    if (err instanceof SshFormatError || err instanceof TypeError) return undefined;
    throw err;
  }
}

/** The fingerprint of the key an armored signature carries, or undefined when it is not one. */
export function sshKeyFingerprint(armored: string): string | undefined {
  try {
    return fingerprintOfBlob(parseSshSig(armored).publicKey);
  } catch (err) {
    if (err instanceof SshFormatError) return undefined;
    throw err;
  }
}

const CURVES: Record<string, { crv: string; size: number; hash: string }> = {
  nistp256: { crv: 'P-256', size: 32, hash: 'sha256' },
  nistp384: { crv: 'P-384', size: 48, hash: 'sha384' },
  nistp521: { crv: 'P-521', size: 66, hash: 'sha512' },
};

const b64url = (b: Buffer): string => b.toString('base64url');
const unsigned = (mpint: Buffer): Buffer => (mpint.length > 0 && mpint[0] === 0 ? mpint.subarray(1) : mpint);
const padded = (b: Buffer, size: number): Buffer => (b.length >= size ? b.subarray(b.length - size) : Buffer.concat([Buffer.alloc(size - b.length), b]));

function nodeKey(blob: Buffer): { type: string; key: KeyObject; curve?: (typeof CURVES)[string] } {
  const r = new Reader(blob);
  const type = r.string().toString('utf8');
  if (type === 'ssh-ed25519') {
    const pk = r.string();
    if (pk.length !== 32) throw new SshFormatError('bad ed25519 key');
    return { type, key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(pk) }, format: 'jwk' }) };
  }
  if (type.startsWith('ecdsa-sha2-')) {
    const curve = CURVES[r.string().toString('utf8')];
    const q = r.string();
    if (!curve || q.length !== 1 + 2 * curve.size || q[0] !== 4) throw new SshFormatError('bad ecdsa key');
    const x = q.subarray(1, 1 + curve.size);
    const y = q.subarray(1 + curve.size);
    return { type, curve, key: createPublicKey({ key: { kty: 'EC', crv: curve.crv, x: b64url(x), y: b64url(y) }, format: 'jwk' }) };
  }
  if (type === 'ssh-rsa') {
    const e = unsigned(r.string());
    const n = unsigned(r.string());
    return { type, key: createPublicKey({ key: { kty: 'RSA', e: b64url(e), n: b64url(n) }, format: 'jwk' }) };
  }
  throw new SshFormatError(`SSH keys of type ${type} are not read`);
}

/**
 * Why an armored SSH signature does not sign `message` under `namespace` with the key of
 * `publicKeyLine`; undefined when it does.
 */
export function sshSignatureProblem(armored: string, publicKeyLine: string, namespace: string, message: Buffer): string | undefined {
  try {
    const sig = parseSshSig(armored);
    const registered = sshPublicKeyBlob(publicKeyLine);
    if (!sig.publicKey.equals(registered)) return 'signed by another key';
    if (sig.namespace !== namespace) return `namespace ${sig.namespace}, not ${namespace}`;
    if (sig.hashAlgorithm !== 'sha512' && sig.hashAlgorithm !== 'sha256') return `hash ${sig.hashAlgorithm} is not sha256 or sha512`;
    const signed = Buffer.concat([
      MAGIC,
      sshString(Buffer.from(sig.namespace)),
      sshString(sig.reserved),
      sshString(Buffer.from(sig.hashAlgorithm)),
      sshString(createHash(sig.hashAlgorithm).update(message).digest()),
    ]);
    const { type, key, curve } = nodeKey(sig.publicKey);
    let ok: boolean;
    if (type === 'ssh-ed25519') {
      ok = sig.sigType === 'ssh-ed25519' && verify(null, signed, key, sig.sigBlob);
    } else if (curve) {
      const rs = new Reader(sig.sigBlob);
      const rawSig = Buffer.concat([padded(unsigned(rs.string()), curve.size), padded(unsigned(rs.string()), curve.size)]);
      ok = sig.sigType === type && verify(curve.hash, signed, { key, dsaEncoding: 'ieee-p1363' }, rawSig);
    } else {
      const hash = sig.sigType === 'rsa-sha2-512' ? 'sha512' : sig.sigType === 'rsa-sha2-256' ? 'sha256' : undefined;
      ok = hash !== undefined && verify(hash, signed, key, sig.sigBlob);
    }
    return ok ? undefined : 'the signature does not verify';
  } catch (err) {
    if (err instanceof SshFormatError) return err.message;
    if (err instanceof TypeError || (err as { code?: string }).code?.startsWith('ERR_')) return `unreadable: ${(err as Error).message}`;
    throw err;
  }
}
