#!/usr/bin/env node
import { runCli } from '../src/cli/program';

/*
 * `npm run bench -- [suite] [--runs N] [--turns N] [--json]`: `triad bench` of a source checkout.
 * The benchmarks are compiled apart from the program (tsconfig.bench.json, to build/bench/), so
 * dist/ ships none; `triad bench` loads them from there when they have been built.
 */
void runCli(['bench', ...process.argv.slice(2)]).then((code) => (process.exitCode = code));
