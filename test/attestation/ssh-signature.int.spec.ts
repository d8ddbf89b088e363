import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sshKeyFingerprint, sshLineFingerprint, sshSignatureProblem } from '../../src/attestation/ssh-signature';

/** SSH signatures as OpenSSH's ssh-keygen makes them, checked by triad's reader. */
describe('SSH signatures (ssh-keygen -Y sign)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'triad-sshsig-'));
  const message = Buffer.from('{"kind":"review","outcome":"approved"}');
  writeFileSync(join(dir, 'msg'), message);

  let keys = 0;
  const signWith = (type: string, namespace = 'triad-decision') => {
    const key = join(dir, `key_${type}_${++keys}`);
    execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-f', key]);
    const sig = execFileSync('ssh-keygen', ['-Y', 'sign', '-n', namespace, '-f', key], { input: message }).toString();
    return { sig, pub: readFileSync(`${key}.pub`, 'utf8'), fingerprint: execFileSync('ssh-keygen', ['-lf', `${key}.pub`]).toString().split(' ')[1] };
  };

  it.each(['ed25519', 'ecdsa', 'rsa'])('given a %s key, its signature of the message verifies and names the key ssh-keygen -l names', (type) => {
    const { sig, pub, fingerprint } = signWith(type);
    expect(sshSignatureProblem(sig, pub, 'triad-decision', message)).toBeUndefined();
    expect(sshKeyFingerprint(sig)).toBe(fingerprint);
    expect(sshLineFingerprint(pub)).toBe(fingerprint);
  });

  it('refuses another message, another namespace, another key and a changed signature', () => {
    const { sig, pub } = signWith('ed25519');
    const other = signWith('ed25519');
    expect(sshSignatureProblem(sig, pub, 'triad-decision', Buffer.from('{"kind":"review","outcome":"rejected"}'))).toBe('the signature does not verify');
    expect(sshSignatureProblem(sig, pub, 'git', message)).toMatch(/namespace/);
    expect(sshSignatureProblem(sig, other.pub, 'triad-decision', message)).toBe('signed by another key');
    const lines = sig.split('\n');
    lines[2] = lines[2].slice(0, 10) + (lines[2][10] === 'A' ? 'B' : 'A') + lines[2].slice(11);
    expect(sshSignatureProblem(lines.join('\n'), pub, 'triad-decision', message)).toBeDefined();
    expect(sshSignatureProblem('not a signature', pub, 'triad-decision', message)).toBe('not an armored SSH signature');
  });
});
