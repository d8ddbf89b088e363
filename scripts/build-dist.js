#!/usr/bin/env node
// Emits dist/ from src/ with SWC, one file at a time (the same transpiler and .swcrc the tests use).
// Type checking is not this script's: `npm run build` runs `tsc --noEmit` first, and `npm run lint`
// checks src, test and bench. A script of our own rather than @swc/cli: the CLI pulls in a binary
// downloader this project has no use for, and emitting a tree is a dozen lines over @swc/core.
//
// Usage: node scripts/build-dist.js   (writes dist/**/*.js and .js.map; removes outputs whose
// source is gone, so a renamed module never lingers in dist/; dist/console, the web console Vite
// builds, is not this script's and is left alone; then bundles the program into dist/triad.cjs,
// which `triad` loads: scripts/bundle-dist.js says why)
'use strict';
const { transformFile } = require('@swc/core');
const { bundleDist } = require('./bundle-dist');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const srcDir = path.join(root, 'src');
const outDir = path.join(root, 'dist');

function sources(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.spec.ts') ? [full] : [];
  });
}

const notOurs = new Set([path.join(outDir, 'console')]);

function outputs(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return notOurs.has(full) ? [] : outputs(full);
    return /\.js(\.map)?$/.test(entry.name) ? [full] : [];
  });
}

async function main() {
  const files = sources(srcDir);
  const expected = new Set();
  await Promise.all(
    files.map(async (file) => {
      const rel = path.relative(srcDir, file).replace(/\.ts$/, '.js');
      const out = path.join(outDir, rel);
      expected.add(out).add(`${out}.map`);
      const { code, map } = await transformFile(file, {
        configFile: path.join(root, '.swcrc'),
        sourceFileName: path.relative(path.dirname(out), file),
        outputPath: out,
      });
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(out, `${code}\n//# sourceMappingURL=${path.basename(out)}.map\n`);
      if (map) fs.writeFileSync(`${out}.map`, map);
    }),
  );
  for (const stale of outputs(outDir)) if (!expected.has(stale)) fs.rmSync(stale);
  const bundleBytes = await bundleDist(root);
  return { count: files.length, bundleBytes };
}

main().then(
  ({ count, bundleBytes }) => process.stdout.write(`dist/: ${count} modules, and dist/triad.cjs (${(bundleBytes / 1e6).toFixed(1)} MB)\n`),
  (error) => {
    process.stderr.write(`build failed: ${error.message}\n`);
    process.exit(1);
  },
);
