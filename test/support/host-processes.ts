import { readdirSync, readFileSync } from 'node:fs';

/**
 * Processes of the host whose command line holds `mark` as one argument (zombies left out). A
 * sandboxed command's pids are its PID namespace's, so tests that check what a command left
 * running give its processes a mark (`sleep 30.<unique>`) and look for it here.
 */
export function hostProcessesWith(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(mark)) found.push(Number(entry));
    } catch {
      // Gone while reading: not running.
    }
  }
  return found;
}

let marks = 0;
/** A `sleep` duration no other process of the host has in its command line. */
export function uniqueSleep(): string {
  return `30.${process.pid}${++marks}`;
}
