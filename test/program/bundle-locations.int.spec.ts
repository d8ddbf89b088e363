import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

// The bundler's one transform of triad's own (scripts/bundle-dist.js): which `__dirname` and
// `__filename` of a module name its location, and so get the module's original place in the
// bundle. Run in plain Node, as the build runs it: the bundler's parser is an ES module, which
// jest's module runtime cannot load.
const SCRIPT = resolve(__dirname, '..', '..', 'scripts', 'bundle-dist.js');

function refs(...codes: string[]): Array<Array<{ text: string; shorthand: boolean }>> {
  const program = `
    const { locationReferencesIn } = require(${JSON.stringify(SCRIPT)});
    const codes = ${JSON.stringify(codes)};
    console.log(JSON.stringify(codes.map((code) => locationReferencesIn(code).map((r) => ({ text: code.slice(r.start, r.end), shorthand: r.shorthand })))));
  `;
  const out = spawnSync(process.execPath, ['-e', program], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(out.stderr);
  return JSON.parse(out.stdout) as Array<Array<{ text: string; shorthand: boolean }>>;
}

it('given module code, when scanned, then only references to the names are found, and a module declaring its own is left alone', () => {
  const [expressions, notReferences, shorthand, declaredConst, declaredParam] = refs(
    // Given references in expressions, template literals and calls:
    'const a = resolve(__dirname, "..", "console"); f(`${__filename}/x`); g(__dirname);',
    // given the names as a property or an object key, or inside strings and comments:
    'x.__dirname; ({ __dirname: 1 }); const s = "__dirname"; // __filename\n/* __dirname */',
    // given a shorthand property (rewritten as `key: value`):
    'module.exports = { __dirname };',
    // given an ES module that computes its own, or a function taking one as a parameter:
    'const __dirname = dirname(fileURLToPath(import.meta.url)); use(__dirname);',
    'function f(__filename) { return __filename; } g(__dirname);',
  );
  const plain = (text: string) => ({ text, shorthand: false });
  expect(expressions).toEqual([plain('__dirname'), plain('__filename'), plain('__dirname')]);
  expect(notReferences).toEqual([]);
  expect(shorthand).toEqual([{ text: '__dirname', shorthand: true }]);
  expect(declaredConst).toEqual([]);
  expect(declaredParam).toEqual([]);
});
