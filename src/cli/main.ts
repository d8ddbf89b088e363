#!/usr/bin/env node
import { loadProgram } from './load-program';

/**
 * `triad`: the installed program's entry (package.json `bin`). The program itself is ./program;
 * this file only loads it, from the bundle when there is one (./load-program), and runs it when
 * started as a command. Tests and tools that run the CLI in-process require this file for
 * `runCli`, and the test harness for `createHttpApp`: both come from the one program loaded here.
 */
const program = loadProgram(__filename);

export const { runCli, buildProgram, createHttpApp, EXIT, exitCodeOf } = program;

if (require.main === module) {
  // The raw bytes of the arguments are only readable for the real process (see well-formed-args).
  const illFormed = program.illFormedCliInput(process.argv);
  if (illFormed !== undefined) {
    process.stderr.write(`triad: ${illFormed}\n`);
    process.exitCode = EXIT.usage;
  } else {
    void runCli(process.argv.slice(2)).then((code) => (process.exitCode = code));
  }
}
