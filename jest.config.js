/**
 * Three projects by file suffix: `*.unit.spec.ts` (pure, no I/O beyond memory), `*.int.spec.ts`
 * (real SQLite files, PostgreSQL, child processes) and `*.e2e.spec.ts` (the real app over HTTP).
 * Integration and end-to-end tests spawn the compiled program (the app, the CLI, crash children),
 * so only those projects build dist/ first; `npm run test:unit` starts at once.
 *
 * TypeScript is transpiled by SWC (`@swc/jest`): syntax is stripped, nothing is type-checked (type
 * checking is `npm run lint`'s, and tsconfig.json sets isolatedModules so that per-file transpiling
 * is sound). It costs about a third less CPU than ts-jest's transpiler on a cold cache, which
 * matters on a 2-core machine where the suite is CPU-bound.
 *
 * @type {import('jest').Config}
 */

// The serving processes the tests start (up to three per test file, four files at once) share one
// PostgreSQL: at the default pool of 10 connections each they could pass its max_connections (100)
// and wait for the database instead of starting. Workers and their children inherit this.
process.env.TRIAD_PG_POOL_SIZE ??= '4';

// The tests' tiny benchmark runs check that the machine probes (CPU speed, fdatasync rate) are
// taken and printed, not their figures: quick probes (bench/machine.ts) spare each of them most of
// a second of spinning.
process.env.TRIAD_BENCH_PROBES ??= 'quick';

// The apps the tests start make and share one server signing key, kept out of the user's own
// ~/.config (the default of TRIAD_SIGNING_KEY_FILE): in a folder of the machine's temp directory.
process.env.XDG_CONFIG_HOME ??= require('node:path').join(require('node:os').tmpdir(), `triad-tests-config-${process.getuid?.() ?? 'user'}`);

const base = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/src'],
  transform: {
    '^.+\\.ts$': '@swc/jest',
    // jose (the A2A SDK's JWS dependency, loaded by its client) ships ES modules only, which jest's
    // CommonJS runtime cannot load: its files are transpiled to CommonJS like the tests' own.
    '^.+/node_modules/jose/.+\\.js$': ['@swc/jest', { module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  setupFiles: ['<rootDir>/test/support/trust-unsigned-decisions.ts'],
};

const buildsDist = { globalSetup: '<rootDir>/test/support/global-setup.js' };

module.exports = {
  // Generous: a loaded machine (shared CI runners, parallel builds) must slow tests down, not fail
  // them. A global option: jest reads the test timeout from the root config, not from projects.
  testTimeout: 60_000,
  testSequencer: '<rootDir>/test/support/sequencer.js',
  projects: [
    { ...base, displayName: 'unit', testMatch: ['**/*.unit.spec.ts'] },
    { ...base, ...buildsDist, displayName: 'int', testMatch: ['**/*.int.spec.ts'] },
    { ...base, ...buildsDist, displayName: 'e2e', testMatch: ['**/*.e2e.spec.ts'] },
  ],
};
