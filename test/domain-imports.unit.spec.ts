import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The domain is pure: a file under a `domain/` folder imports other `domain/` folders only, and
// the few pure modules of the kernel below (each itself held to the same rule), never the shell —
// no store, no child process, no clock. Types of a port may be imported (`import type` of a
// *.port.ts file: it is erased at compile time, and a port is the domain's own vocabulary for what
// the shell does). ESLint's no-restricted-imports matches an import's text, not the file it
// resolves to, so a relative path could not be told from another; this reads the imports instead.

const ROOT = join(__dirname, '..');
const SRC = join(ROOT, 'src');

/** Pure modules outside a `domain/` folder that the domain may use: errors, hashing, text and the attestation checks. */
const KERNEL = [
  'src/shared/errors.ts',
  'src/shared/canonical-json.ts',
  'src/shared/text.ts',
  'src/shared/self-decision.ts',
  'src/auth/names.ts',
  'src/attestation/attestation.ts',
  'src/attestation/decision-gate.ts',
  'src/attestation/decision-trust.ts',
  'src/attestation/gate-refusal.ts',
  'src/attestation/personal-signature.ts',
  'src/attestation/ssh-signature.ts',
];

/** Packages the domain may import: xstate's pure API (the machines), and hashing and bytes for the kernel. */
const PACKAGES = new Set(['xstate']);
const KERNEL_PACKAGES = new Set(['node:crypto', 'node:buffer']);

interface Import {
  specifier: string;
  typeOnly: boolean;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const found: Import[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'([^']+)'/gm)) found.push({ specifier: m[2], typeOnly: m[1] !== undefined });
  for (const m of text.matchAll(/\b(?:import|require)\(\s*'([^']+)'\s*\)/g)) found.push({ specifier: m[1], typeOnly: false });
  return found;
}

function resolved(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  return existsSync(`${base}.ts`) ? `${base}.ts` : join(base, 'index.ts');
}

const inDomain = (file: string): boolean => relative(SRC, file).split('/').includes('domain');
const isKernel = (file: string): boolean => KERNEL.includes(relative(ROOT, file));

/** Why an import is not the domain's to make, or undefined when it may. */
function problem(from: string, imp: Import): string | undefined {
  if (!imp.specifier.startsWith('.')) {
    const allowed = isKernel(from) ? KERNEL_PACKAGES.has(imp.specifier) : PACKAGES.has(imp.specifier);
    return allowed ? undefined : `package ${imp.specifier}`;
  }
  const target = resolved(from, imp.specifier);
  if (inDomain(target) || isKernel(target)) return undefined;
  if (imp.typeOnly && target.endsWith('.port.ts')) return undefined;
  return relative(ROOT, target);
}

function violations(files: string[]): string[] {
  return files.flatMap((file) =>
    importsOf(file)
      .map((imp) => problem(file, imp))
      .filter((p): p is string => p !== undefined)
      .map((p) => `${relative(ROOT, file)} imports ${p}`),
  );
}

const DOMAIN_FILES = filesUnder(SRC).filter(inDomain);

it('finds the domain folders', () => {
  expect(DOMAIN_FILES.map((f) => relative(SRC, f).split('/domain/')[0]).filter((d, i, all) => all.indexOf(d) === i).sort()).toEqual(['projects', 'review-gate', 'team', 'webhooks']);
});

it('a domain file imports only domain folders, the kernel, and the types of ports', () => {
  expect(violations(DOMAIN_FILES)).toEqual([]);
});

it('the kernel is held to the same rule, with hashing and bytes as its only packages', () => {
  expect(violations(KERNEL.map((f) => join(ROOT, f)))).toEqual([]);
});

it('the rule catches a shell import', () => {
  const from = join(SRC, 'team/domain/run-decider.ts');
  expect(problem(from, { specifier: '../tools/tool-registry', typeOnly: false })).toBe('src/team/tools/tool-registry.ts');
  expect(problem(from, { specifier: 'node:child_process', typeOnly: false })).toBe('package node:child_process');
  expect(problem(from, { specifier: '../models/model.port', typeOnly: false })).toBe('src/team/models/model.port.ts');
  expect(problem(from, { specifier: '../models/model.port', typeOnly: true })).toBeUndefined();
});
