// Builds dist/ before the integration and end-to-end projects: crash, CLI and app tests spawn the
// compiled program as a real child process. tsc builds incrementally, and not at all when no
// source or tsconfig changed since the last successful build (a stamp written after it): both
// projects name this setup, and running one test file should not cost a compile.
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const stamp = path.join(root, 'dist', '.test-build-stamp');

function newestChange(entry) {
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(entry).reduce((newest, name) => Math.max(newest, newestChange(path.join(entry, name))), stat.mtimeMs);
}

function upToDate() {
  if (!existsSync(stamp)) return false;
  const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => path.join(root, p));
  return Math.max(...inputs.map(newestChange)) < statSync(stamp).mtimeMs;
}

module.exports = async () => {
  if (upToDate()) return;
  execFileSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', path.join('dist', '.tsbuildinfo')],
    { cwd: root, stdio: 'inherit' },
  );
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
};
