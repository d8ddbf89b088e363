import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

// jest's projects pick tests by suffix (jest.config.js): a spec named otherwise would never run.

function specsUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? specsUnder(join(dir, e.name)) : e.name.endsWith('.spec.ts') ? [join(dir, e.name)] : [],
  );
}

it('every spec file is *.unit.spec.ts, *.int.spec.ts or *.e2e.spec.ts', () => {
  const root = join(__dirname, '..');
  const specs = [...specsUnder(join(root, 'test')), ...specsUnder(join(root, 'src'))].map((f) => relative(root, f));
  expect(specs.length).toBeGreaterThan(0);
  expect(specs.filter((f) => !/\.(unit|int|e2e)\.spec\.ts$/.test(f))).toEqual([]);
});
