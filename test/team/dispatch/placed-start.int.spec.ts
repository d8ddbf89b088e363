import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../../support/temp-dir';

/**
 * A run placed on this process at its launch holds the lease taken then: its driver starts without
 * taking it again while nearly all of the TTL is left, and takes it again when less is. The
 * driver pool and placement run from dist/ in a child (test/support/supervisor-lease-child.js).
 */
const CHILD = resolve(__dirname, '..', '..', 'support', 'supervisor-lease-child.js');
const TTL = 15_000;

async function placeThenStart(advanceMs: number) {
  const dir = tempDir('triad-supervisor-lease-');
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [CHILD], {
      env: { ...process.env, SUPERVISOR_LEASE_DIR: dir.path, SUPERVISOR_LEASE_TTL_MS: String(TTL), SUPERVISOR_LEASE_ADVANCE_MS: String(advanceMs) },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as { placement: { kind: string }; takes: string[]; atGate: boolean };
  } finally {
    dir.remove();
  }
}

describe('the driver pool starting a run placed here', () => {
  it('given a run placed here just now, when its driver starts, then the lease is not taken again and the run is driven to the gate', async () => {
    const out = await placeThenStart(0);
    expect(out.placement).toEqual({ kind: 'take' });
    expect(out.takes).toEqual(['run_lease_child']);
    expect(out.atGate).toBe(true);
  });

  it('given a placement that has used a tenth of the lease when the driver starts, then the lease is taken again', async () => {
    const out = await placeThenStart(TTL * 0.1);
    expect(out.takes).toEqual(['run_lease_child', 'run_lease_child']);
    expect(out.atGate).toBe(true);
  });
});

describe('a burst of launches at one process', () => {
  it('given a cap of 3 and 5 launches placed at once, then 3 are taken here and 2 queued (none over the cap)', async () => {
    const dir = tempDir('triad-supervisor-burst-');
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [CHILD], {
        env: { ...process.env, SUPERVISOR_LEASE_DIR: dir.path, SUPERVISOR_LEASE_TTL_MS: String(TTL), SUPERVISOR_BURST: '5', SUPERVISOR_CAP: '3' },
      });
      const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { placements: string[]; load: number; takes: string[] };
      expect(out.placements.filter((k) => k === 'take')).toHaveLength(3);
      expect(out.placements.filter((k) => k === 'queue')).toHaveLength(2);
      expect(out.takes).toHaveLength(3);
    } finally {
      dir.remove();
    }
  });
});
