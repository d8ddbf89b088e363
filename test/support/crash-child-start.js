// Starts the crash tests' child (crash-child.js) from its bundle, build/test/crash-child.cjs (made
// by jest's globalSetup), with V8's compiled code of it cached between starts in a folder beside
// it: as `triad` starts from its own bundle (src/cli/load-program.ts), which halves the CPU of a
// start again. The cache is written when a child exits; one killed with SIGKILL writes none, and
// the next start that finds none writes it.
'use strict';
const path = require('node:path');
const { requireWithCodeCache } = require('../../dist/cli/load-program.js');

const bundle = path.resolve(__dirname, '..', '..', 'build', 'test', 'crash-child.cjs');
if (requireWithCodeCache(bundle, path.dirname(bundle)) === undefined) require(bundle);
