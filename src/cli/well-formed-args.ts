import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { isWellFormedText } from '../shared/text';

/**
 * Command-line text is human input and must be well-formed (see "Text in events" in
 * docs/EVENTS.md). Node decodes arguments and the environment as UTF-8 and puts U+FFFD where the
 * bytes are not UTF-8, so that is invisible in `process.argv`: on Linux the raw bytes are read back
 * from /proc/self/cmdline and /proc/self/environ (elsewhere only the decoded strings are checked).
 */

/** What is wrong with the arguments (`argv` as `process.argv`) or TRIAD_USER, or undefined. */
export function illFormedCliInput(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  const args = argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (!isWellFormedText(args[i])) return `argument ${i + 1} is not well-formed text`;
  }
  if (env.TRIAD_USER !== undefined && !isWellFormedText(env.TRIAD_USER)) return 'TRIAD_USER is not well-formed text';
  if (argv !== process.argv) return undefined;
  const rawArgs = procEntries('/proc/self/cmdline');
  if (rawArgs !== undefined && rawArgs.length >= args.length) {
    const tail = rawArgs.slice(rawArgs.length - args.length);
    const bad = tail.findIndex((b) => !isUtf8(b));
    if (bad !== -1) return `argument ${bad + 1} is not valid UTF-8`;
  }
  if (env === process.env && env.TRIAD_USER !== undefined) {
    const user = procEntries('/proc/self/environ')?.find((b) => b.subarray(0, 11).toString('latin1') === 'TRIAD_USER=');
    if (user !== undefined && !isUtf8(user)) return 'TRIAD_USER is not valid UTF-8';
  }
  return undefined;
}

/** The NUL-separated entries of a /proc file, or undefined where there is none. */
function procEntries(file: string): Buffer[] | undefined {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch {
    return undefined;
  }
  const out: Buffer[] = [];
  let from = 0;
  for (let at = raw.indexOf(0); at !== -1; at = raw.indexOf(0, from)) {
    out.push(raw.subarray(from, at));
    from = at + 1;
  }
  if (from < raw.length) out.push(raw.subarray(from));
  return out;
}
