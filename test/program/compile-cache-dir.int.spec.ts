import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { compileCacheDir } from '../../src/cli/load-program';
import { tempDir } from '../support/temp-dir';

// The folder of the bundle's compiled-code cache: compiled code is executed as it is read, so only a
// private folder of this user's is ever used; anything else means no cache, never an error.
describe('the compiled-code cache folder', () => {
  const base = tempDir('triad-cache-base-');
  afterAll(() => base.remove());
  const uid = process.getuid!();
  let n = 0;
  const fresh = () => {
    const dir = join(base.path, `t${n++}`);
    mkdirSync(dir);
    return dir;
  };

  it('given no folder yet, when asked for, then it is created private (0700) and used', () => {
    const at = fresh();
    const dir = compileCacheDir(at);
    expect(dir).toBe(join(at, `triad-compile-cache-${uid}`));
    expect(statSync(dir!).mode & 0o777).toBe(0o700);
    expect(compileCacheDir(at)).toBe(dir);
  });

  it('given a folder others can write, when asked for, then there is no cache', () => {
    const at = fresh();
    mkdirSync(join(at, `triad-compile-cache-${uid}`));
    chmodSync(join(at, `triad-compile-cache-${uid}`), 0o777);
    expect(compileCacheDir(at)).toBeUndefined();
  });

  it('given a symbolic link in its place, even to a private folder of ours, when asked for, then there is no cache', () => {
    const at = fresh();
    mkdirSync(join(at, 'elsewhere'), { mode: 0o700 });
    symlinkSync(join(at, 'elsewhere'), join(at, `triad-compile-cache-${uid}`));
    expect(compileCacheDir(at)).toBeUndefined();
  });

  it('given a folder another user made first, when asked for, then there is no cache', () => {
    const at = fresh();
    const planted = join(at, `triad-compile-cache-${uid}`);
    mkdirSync(planted, { mode: 0o700 });
    // The tests run as root on CI; elsewhere a folder of another user's cannot be made here.
    if (uid !== 0) return;
    chownSync(planted, 65534, 65534);
    expect(compileCacheDir(at)).toBeUndefined();
  });

  it('given a temporary folder where nothing can be made, when asked for, then there is no cache', () => {
    expect(compileCacheDir('/proc')).toBeUndefined();
    expect(compileCacheDir(join(fresh(), 'missing', 'deeper'))).toBeUndefined();
  });
});
