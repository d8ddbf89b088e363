import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { illFormedCliInput } from '../../src/cli/well-formed-args';
import { CLI, triadEnv } from '../review-gate/gate/gate-support';
import { tempDir } from '../support/temp-dir';

// Command-line text is human input: bytes that are not UTF-8 in an argument or in TRIAD_USER are
// refused with exit 2 and one line, before anything is opened. Node's spawn only passes strings,
// so the raw bytes go through a shell's printf.

jest.setTimeout(60_000);

function shell(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', script], { env: triadEnv({ ...env, NODE: process.execPath, CLI }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('CLI arguments and TRIAD_USER must be well-formed text', () => {
  const dir = tempDir('triad-cli-text-');
  afterAll(() => dir.remove());
  const dataDir = join(dir.path, 'data');

  it.each([
    ['an argument that is not UTF-8', `exec "$NODE" "$CLI" review approve rev_x_1 --reason "$(printf 'caf\\351')"`, 'triad: argument 5 is not valid UTF-8\n'],
    ['TRIAD_USER that is not UTF-8', `TRIAD_USER="$(printf 'b\\351b')" exec "$NODE" "$CLI" review list`, 'triad: TRIAD_USER is not valid UTF-8\n'],
  ])('%s: exit 2, one line, nothing opened', async (_label, script, line) => {
    const res = await shell(script, { TRIAD_DATA_DIR: dataDir });
    expect(res).toEqual({ code: 2, stdout: '', stderr: line });
    expect(existsSync(dataDir)).toBe(false);
  });

  it('decoded strings with NUL or lone surrogates are refused too (where the bytes cannot be read back)', () => {
    const argv = ['node', 'main.js', 'review', 'reject', 'x', '--reason'];
    expect(illFormedCliInput([...argv, 'a\ud800'], {})).toBe('argument 5 is not well-formed text');
    expect(illFormedCliInput([...argv, 'fine 😀'], { TRIAD_USER: 'x\u0000' })).toBe('TRIAD_USER is not well-formed text');
    expect(illFormedCliInput([...argv, 'fine 😀'], { TRIAD_USER: 'ann' })).toBeUndefined();
  });
});
