#!/usr/bin/env node
import { loadProgram } from './load-program';

/**
 * `triad`: the installed program's entry (package.json `bin`). The program itself is ./program;
 * this file only loads it, from the bundle when there is one (./load-program), and runs it when
 * started as a command. Tests and tools that run the CLI in-process require this file for
 * `runCli`, the test harness and the benchmarks for `createHttpApp` (and the benchmarks for what
 * they observe in a server): all from the one program loaded here.
 */
const program = loadProgram(__filename);
const { runCli, EXIT } = program;

export = program;

if (require.main === module) {
  // The raw bytes of the arguments are only readable for the real process (see well-formed-args).
  const illFormed = program.illFormedCliInput(process.argv);
  if (illFormed !== undefined) {
    process.stderr.write(`triad: ${illFormed}\n`);
    process.exitCode = EXIT.usage;
  } else {
    // runCli never rejects: every error is written to stderr and becomes the exit code.
    void runCli(process.argv.slice(2)).then((code) => (process.exitCode = code));
  }
}
