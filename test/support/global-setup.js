// Builds dist/ before the integration and end-to-end projects: crash, CLI and app tests spawn the
// compiled program as a real child process, and the console's browser tests load the web console
// (dist/console, built by Vite) from it. It emits dist/ the way `npm run build` does (SWC, then the
// bundle dist/triad.cjs: a few seconds) but skips the type check, which is `npm run lint`'s (tsc over src/ would cost the suite
// half a minute of CPU). Nothing runs when no source or build setting changed since the last
// successful build (a stamp written after it): both projects name this setup, and running one test
// file should not cost a build.
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const { bundleModules } = require('../../scripts/bundle-dist');

const root = path.resolve(__dirname, '..', '..');
/** Where bundleCrashChild writes the crash tests' child (test/recovery/crash-support.ts starts it). */
const CRASH_CHILD_BUNDLE = path.join(root, 'build', 'test', 'crash-child.cjs');
const stamp = path.join(root, 'dist', '.test-build-stamp');
// Outside dist/console: Vite empties its output folder.
const consoleStamp = path.join(root, 'dist', '.console-build-stamp');

function newestChange(entry) {
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(entry).reduce((newest, name) => Math.max(newest, newestChange(path.join(entry, name))), stat.mtimeMs);
}

function upToDate(stampFile, inputs) {
  if (!existsSync(stampFile)) return false;
  return Math.max(...inputs.map((p) => newestChange(path.join(root, p)))) < statSync(stampFile).mtimeMs;
}

function buildConsole() {
  // The console imports the server's API types, so a change under src/ can change it too.
  if (upToDate(consoleStamp, ['console', 'src', 'package.json']) && existsSync(path.join(root, 'dist', 'console', 'index.html'))) return;
  execFileSync(process.execPath, [path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'), 'build', '--config', 'console/vite.config.mts'], { cwd: root, stdio: 'inherit' });
  writeFileSync(consoleStamp, `${new Date().toISOString()}\n`);
}

/** The crash tests' child (test/support/crash-child.js) with dist/ and node_modules in one file, after dist/. */
async function bundleCrashChild() {
  const dir = path.join(root, 'build', 'test');
  const childStamp = path.join(dir, '.crash-child-stamp');
  if (upToDate(childStamp, ['dist', 'test/support/crash-child.js', 'scripts/bundle-dist.js']) && existsSync(CRASH_CHILD_BUNDLE)) return;
  await bundleModules({ entry: path.join(root, 'test', 'support', 'crash-child.js'), dir, name: 'crash-child', minify: false, sourcemap: false });
  writeFileSync(childStamp, `${new Date().toISOString()}\n`);
}

module.exports = async () => {
  buildConsole();
  if (!upToDate(stamp, ['src', '.swcrc', 'scripts/build-dist.js', 'scripts/bundle-dist.js', 'package.json'])) {
    execFileSync(process.execPath, [path.join(root, 'scripts', 'build-dist.js')], { cwd: root, stdio: 'inherit' });
    writeFileSync(stamp, `${new Date().toISOString()}\n`);
  }
  await bundleCrashChild();
};
