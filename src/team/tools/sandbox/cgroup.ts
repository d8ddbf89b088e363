import { accessSync, constants, existsSync, promises as fs, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * A cgroup per sandbox, for the limits rlimits cannot hold: processes alive at once (RLIMIT_NPROC
 * is never enforced for root, and counts every process of the user elsewhere) and the memory of
 * the whole sandbox. Hand-written: it is a few writes to the kernel's cgroup files, which no
 * maintained Node library wraps; bubblewrap itself leaves cgroups to its caller.
 *
 * Used where this process may create child cgroups of its own: cgroup v1's `pids` and `memory`
 * hierarchies, or a v2 cgroup whose `cgroup.subtree_control` already delegates `pids` (and
 * `memory`) to its children (systemd's `Delegate=yes` with a leaf for the server). Elsewhere the
 * sandbox falls back to rlimits and says so at start.
 */

export interface CgroupLimits {
  maxProcesses: number;
  maxMemoryBytes: number;
}

export interface SandboxCgroup {
  /** Moves a process into the cgroup (before it starts the sandboxed program). */
  join(pid: number): Promise<void>;
  /** True when a fork was refused for the process limit. */
  pidsHit(): boolean;
  /** True when the memory limit was reached. */
  memoryHit(): boolean;
  /** Kills what is left in it, then removes it. */
  remove(): Promise<void>;
}

interface Hierarchy {
  version: 1 | 2;
  /** The directory of this process's own cgroup in that hierarchy. */
  dir: string;
}

export class Cgroups {
  private seq = 0;

  private constructor(
    private readonly pids: Hierarchy,
    private readonly memory: Hierarchy | undefined,
  ) {}

  /** What this host offers, or undefined when no pids cgroup can be made here. */
  static detect(root = '/sys/fs/cgroup'): Cgroups | undefined {
    let lines: string[];
    try {
      lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean);
    } catch {
      return undefined;
    }
    const v1 = (controller: string): Hierarchy | undefined => {
      const line = lines.find((l) => l.split(':')[1]?.split(',').includes(controller));
      if (!line) return undefined;
      return { version: 1, dir: join(root, controller, line.split(':').slice(2).join(':')) };
    };
    const v2line = lines.find((l) => l.startsWith('0::'));
    if (v2line) {
      const dir = join(root, v2line.slice(3));
      try {
        const delegated = readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
        if (delegated.includes('pids') && writableDir(dir)) return new Cgroups({ version: 2, dir }, delegated.includes('memory') ? { version: 2, dir } : undefined);
      } catch {
        // No v2 cgroup here (or a hybrid host whose unified tree has no controllers): v1 below.
      }
    }
    const pids = v1('pids');
    if (!pids || !writableDir(pids.dir) || !existsSync(join(pids.dir, 'cgroup.procs'))) return undefined;
    const memory = v1('memory');
    return new Cgroups(pids, memory && writableDir(memory.dir) && existsSync(join(memory.dir, 'cgroup.procs')) ? memory : undefined);
  }

  get limitsMemory(): boolean {
    return this.memory !== undefined;
  }

  async create(limits: CgroupLimits): Promise<SandboxCgroup> {
    // Unique across the sandboxes of this process (each opened Sandbox has its own Cgroups) and across processes.
    const name = `triad-sandbox-${process.pid}-${++this.seq}-${randomBytes(4).toString('hex')}`;
    const dirs: Array<{ dir: string; version: 1 | 2 }> = [];
    const pidsDir = join(this.pids.dir, name);
    await fs.mkdir(pidsDir);
    dirs.push({ dir: pidsDir, version: this.pids.version });
    await fs.writeFile(join(pidsDir, 'pids.max'), String(limits.maxProcesses));
    let memoryDir: string | undefined;
    if (this.memory) {
      memoryDir = this.memory.dir === this.pids.dir ? pidsDir : join(this.memory.dir, name);
      if (memoryDir !== pidsDir) {
        await fs.mkdir(memoryDir);
        dirs.push({ dir: memoryDir, version: this.memory.version });
      }
      if (this.memory.version === 2) {
        await fs.writeFile(join(memoryDir, 'memory.max'), String(limits.maxMemoryBytes));
        await fs.writeFile(join(memoryDir, 'memory.swap.max'), '0').catch(() => undefined); // no swap accounting on this host: the memory limit alone holds
      } else {
        await fs.writeFile(join(memoryDir, 'memory.limit_in_bytes'), String(limits.maxMemoryBytes));
      }
    }
    const memoryVersion = this.memory?.version;
    const counter = (file: string, key: string): number => {
      try {
        const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${key} `));
        return line ? Number(line.split(' ')[1]) : 0;
      } catch {
        return 0;
      }
    };
    return {
      join: async (pid) => {
        for (const { dir } of dirs) await fs.writeFile(join(dir, 'cgroup.procs'), String(pid));
      },
      pidsHit: () => counter(join(pidsDir, 'pids.events'), 'max') > 0,
      memoryHit: () => {
        if (!memoryDir) return false;
        if (memoryVersion === 2) return counter(join(memoryDir, 'memory.events'), 'oom_kill') > 0 || counter(join(memoryDir, 'memory.events'), 'max') > 0;
        return counter(join(memoryDir, 'memory.oom_control'), 'oom_kill') > 0;
      },
      remove: async () => {
        for (const { dir, version } of dirs) await removeCgroup(dir, version);
      },
    };
  }
}

/** Kills every process left in the cgroup, then removes it (a cgroup with processes cannot be removed). */
async function removeCgroup(dir: string, version: 1 | 2): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    if (version === 2) await fs.writeFile(join(dir, 'cgroup.kill'), '1').catch(() => undefined); // kernels before 5.14 have no cgroup.kill: the pids below are killed one by one
    // No process list: the cgroup is gone already, or its rmdir below says why not.
    const procs = await fs.readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const pid of procs.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // Gone between the read and the kill: nothing left to stop.
      }
    }
    try {
      await fs.rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`the sandbox cgroup ${dir} still holds processes`);
}

function writableDir(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
