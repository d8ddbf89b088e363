// Bundles the compiled program (dist/cli/program.js and every module it imports, node_modules
// included) into one file, dist/triad.cjs, which `triad` (dist/cli/main.js) loads when present.
//
// Why: a command's start-up was mostly module loading, not triad's work: ~1,000 files resolved
// (stat, realpath, package.json reads), read and compiled one by one, NestJS's ES modules through
// require(esm). One minified file has none of the resolution, and V8 can cache its compiled code
// between runs as a whole (src/cli/load-program.ts, Node 22.8 and later). dist/ keeps every module as well: tests,
// benchmarks and tools load them piecemeal, and the bundle is built from them.
//
// The bundler is rolldown's; what is triad's own here is one transform: CommonJS code that names
// `__dirname` or `__filename` (the web console's folder, the search worker's file, gRPC's .proto
// folders) gets its original location, relative to the bundle, instead of the bundle's own.
//
// Usage: require('./bundle-dist').bundleDist(root) after dist/ is emitted (scripts/build-dist.js).
'use strict';
const path = require('node:path');

/** Kept out of the bundle: native code, and what the program loads only from a source checkout. */
const EXTERNAL = [/^node:/, /\.node$/, 'better-sqlite3', 'typescript'];

/**
 * Optional peers of NestJS that triad does not install: Nest imports them only when an app uses
 * them (microservices, websockets, Fastify), so the bundler cannot resolve them and need not.
 */
const OPTIONAL_PEERS = ['@nestjs/microservices', '@nestjs/websockets', '@fastify/static'];
const isOptionalPeer = (log) => log.code === 'UNRESOLVED_IMPORT' && OPTIONAL_PEERS.some((peer) => log.message.includes(`'${peer}`));

/**
 * `__dirname` / `__filename` references of one module, as [start, end, name] (UTF-16 offsets), or
 * none when the module declares either name itself (an ES module computing its own).
 */
function locationReferences(ast) {
  const found = [];
  let declaresOwn = false;
  const visit = (node, parent, key) => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child, parent, key);
      return;
    }
    if (node === null || typeof node !== 'object' || typeof node.type !== 'string') return;
    if (node.type === 'Identifier' && (node.name === '__dirname' || node.name === '__filename')) {
      const isKey = (parent?.type === 'MemberExpression' && key === 'property' && !parent.computed) || (parent?.type === 'Property' && key === 'key' && !parent.computed);
      const isDeclared = (parent?.type === 'VariableDeclarator' && key === 'id') || key === 'params' || (parent?.type === 'FunctionDeclaration' && key === 'id');
      if (isDeclared) declaresOwn = true;
      else if (!isKey) found.push({ start: node.start, end: node.end, name: node.name, shorthand: parent?.type === 'Property' && parent.shorthand });
      return;
    }
    for (const [k, value] of Object.entries(node)) {
      // A shorthand property (`{ __dirname }`) holds one identifier as both key and value: seen once, as the value.
      if (k === 'key' && node.type === 'Property' && node.shorthand) continue;
      if (k !== 'type' && value && typeof value === 'object') visit(value, node, k);
    }
  };
  visit(ast, undefined, undefined);
  return declaresOwn ? [] : found;
}

/** `locationReferences` of a module's code, parsed by the bundler's own parser. */
function locationReferencesIn(code) {
  const { parseAst } = require('rolldown/parseAst');
  return locationReferences(parseAst(code, { lang: 'js' }));
}

function originalLocationPlugin(bundleDir) {
  return {
    name: 'triad:original-location',
    transform(code, id) {
      if (!code.includes('__dirname') && !code.includes('__filename')) return null;
      const refs = locationReferencesIn(code);
      if (refs.length === 0) return null;
      const rel = (file) => path.relative(bundleDir, file).split(path.sep).join('/');
      const value = {
        __dirname: `require("node:path").join(__dirname, ${JSON.stringify(rel(path.dirname(id)))})`,
        __filename: `require("node:path").join(__dirname, ${JSON.stringify(rel(id))})`,
      };
      let out = code;
      for (const ref of refs.sort((a, b) => b.start - a.start)) {
        const expr = ref.shorthand ? `${ref.name}: ${value[ref.name]}` : `(${value[ref.name]})`;
        out = out.slice(0, ref.start) + expr + out.slice(ref.end);
      }
      return { code: out, map: null };
    },
  };
}

/**
 * Writes `<dir>/<name>.cjs` from `entry` and every module it imports (node_modules included, but
 * EXTERNAL); resolves to its size in bytes. Minified with a source map for the program; a test's
 * bundle, built for speed of loading in its many child processes, need not be.
 */
async function bundleModules({ entry, dir, name, minify = true, sourcemap = true }) {
  const { rolldown } = require('rolldown');
  const bundle = await rolldown({
    input: { [name]: entry },
    platform: 'node',
    external: EXTERNAL,
    plugins: [originalLocationPlugin(dir)],
    onLog(level, log) {
      if (level !== 'debug' && !isOptionalPeer(log)) process.stderr.write(`bundle ${level}: ${log.message}\n`);
    },
  });
  try {
    const { output } = await bundle.write({
      dir,
      format: 'cjs',
      dynamicImportInCjs: false,
      entryFileNames: '[name].cjs',
      codeSplitting: false,
      minify,
      charset: 'ascii',
      keepNames: true,
      sourcemap,
    });
    return output[0].code.length;
  } finally {
    await bundle.close();
  }
}

/** Writes dist/triad.cjs (and its source map) from dist/cli/program.js; resolves to its size in bytes. */
function bundleDist(root) {
  const distDir = path.join(root, 'dist');
  return bundleModules({ entry: path.join(distDir, 'cli', 'program.js'), dir: distDir, name: 'triad' });
}

module.exports = { bundleDist, bundleModules, locationReferencesIn };
