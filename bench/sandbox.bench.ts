import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createBuiltinTools } from '../src/team/tools/builtin-tools';
import { DEFAULT_SANDBOX_SETTINGS, Sandbox } from '../src/team/tools/sandbox/sandbox';
import type { ToolDefinition } from '../src/team/tools/tool.port';
import { cpuProbeText, machineInfo, summariseFine, type MachineInfo, type Summary } from './machine';

/**
 * What the sandbox costs a command (`npm run bench -- sandbox [--runs N]`): run_command of `true`
 * and of a 100 ms command (`sleep 0.1`), sandboxed (bubblewrap, the pids and memory cgroups where
 * the host has them, the rlimits) and unsandboxed (TRIAD_SANDBOX=off), alternated call by call so
 * that the machine's drift falls on both alike; and one with a network allow-list (the proxy and
 * its bridge started and stopped with the command). Medians of wall time per call, in ms.
 */

export interface SandboxBenchOptions {
  /** Calls per variant; default 40. */
  runs?: number;
  dataDir: string;
  log: (line: string) => void;
}

export interface SandboxBenchResult {
  machine: MachineInfo;
  sandbox: string;
  calls: number;
  ms: Record<'trueOff' | 'trueSandboxed' | 'sleepOff' | 'sleepSandboxed' | 'trueWithNetwork', Summary>;
  /** Median sandboxed minus median unsandboxed, for `true`. */
  overheadMs: number;
}

export async function runSandboxBench(options: SandboxBenchOptions): Promise<SandboxBenchResult> {
  const calls = options.runs ?? 40;
  const machine = machineInfo();
  const sandboxed = Sandbox.open(DEFAULT_SANDBOX_SETTINGS);
  if (!sandboxed.usable) throw new Error(`the sandbox cannot start here: ${sandboxed.describe()}`);
  const off = Sandbox.open({ ...DEFAULT_SANDBOX_SETTINGS, mode: 'off' });
  const tool = (s: Sandbox): ToolDefinition => createBuiltinTools({}, s).find((t) => t.name === 'run_command')!;
  const on = tool(sandboxed);
  const plain = tool(off);
  const workspace = mkdtempSync(join(options.dataDir, 'sandbox-bench-'));
  const context = (network?: string[]) => ({ runId: 'bench', role: 'executor' as const, workspace, signal: new AbortController().signal, ...(network ? { network } : {}) });
  const time = async (t: ToolDefinition, command: string, network?: string[]): Promise<number> => {
    const started = process.hrtime.bigint();
    const outcome = await t.execute({ command }, context(network));
    if (outcome.isError) throw new Error(`the benchmark's command failed: ${outcome.output}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const samples = { trueOff: [] as number[], trueSandboxed: [] as number[], sleepOff: [] as number[], sleepSandboxed: [] as number[], trueWithNetwork: [] as number[] };
  try {
    // Warm-up: the first sandbox pays for the kernel's caches of the binds.
    await time(on, 'true');
    await time(plain, 'true');
    for (let i = 0; i < calls; i++) {
      samples.trueOff.push(await time(plain, 'true'));
      samples.trueSandboxed.push(await time(on, 'true'));
      samples.sleepOff.push(await time(plain, 'sleep 0.1'));
      samples.sleepSandboxed.push(await time(on, 'sleep 0.1'));
      samples.trueWithNetwork.push(await time(on, 'true', ['registry.npmjs.org']));
    }
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
  const ms = {
    trueOff: summariseFine(samples.trueOff),
    trueSandboxed: summariseFine(samples.trueSandboxed),
    sleepOff: summariseFine(samples.sleepOff),
    sleepSandboxed: summariseFine(samples.sleepSandboxed),
    trueWithNetwork: summariseFine(samples.trueWithNetwork),
  };
  const overheadMs = Math.round((ms.trueSandboxed.median - ms.trueOff.median) * 100) / 100;
  options.log(`sandbox: ${machine.cpuModel}, ${machine.cores} cores, ${cpuProbeText(machine)}; ${sandboxed.describe()}`);
  options.log(`sandbox: run_command, ${calls} calls each, alternated; median (min–max) ms per call`);
  const line = (name: string, s: Summary) => options.log(`  ${name.padEnd(34)} ${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`);
  line('true, unsandboxed', ms.trueOff);
  line('true, sandboxed', ms.trueSandboxed);
  line('sleep 0.1, unsandboxed', ms.sleepOff);
  line('sleep 0.1, sandboxed', ms.sleepSandboxed);
  line('true, sandboxed with a network proxy', ms.trueWithNetwork);
  options.log(`  the sandbox adds ${overheadMs.toFixed(1)} ms per command`);
  return { machine, sandbox: sandboxed.describe(), calls, ms, overheadMs };
}
