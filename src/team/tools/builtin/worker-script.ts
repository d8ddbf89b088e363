import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/**
 * What to hand `new Worker(...)` for a worker module written in TypeScript that sits next to the
 * module starting it (`search.worker.ts` beside `search-files.ts`).
 *
 * In the compiled program (dist/) the caller is a `.js` file and the worker's compiled `.js` is
 * beside it: the thread loads that file by path. Run from the sources (jest transpiles src/ in
 * memory), there is no `.js`, and a thread cannot load a `.ts` file: the worker's source is
 * transpiled here with the `typescript` package (a development dependency, never loaded by the
 * compiled program), once per process, and handed over as code (`eval: true`). Only syntax is
 * removed; the worker is type-checked with the rest of src/ by `tsc`.
 */
export interface WorkerScript {
  /** The first argument of `new Worker`: a file path, or the code itself when `eval` is set. */
  script: string;
  eval: boolean;
}

const transpiled = new Map<string, Promise<string>>();

/**
 * @param callerFile the starting module's own file (its `__filename`)
 * @param workerName the worker module's name without extension, e.g. `search.worker`
 */
export async function workerScript(callerFile: string, workerName: string): Promise<WorkerScript> {
  const dir = path.dirname(callerFile);
  if (path.extname(callerFile) !== '.ts') return { script: path.join(dir, `${workerName}.js`), eval: false };
  const source = path.join(dir, `${workerName}.ts`);
  let code = transpiled.get(source);
  if (!code) {
    code = transpile(source);
    transpiled.set(source, code);
    // Not a drop: a failed transpile is forgotten so the next call tries again; the caller gets the rejection through `code`.
    code.catch(() => transpiled.delete(source));
  }
  return { script: await code, eval: true };
}

async function transpile(file: string): Promise<string> {
  // A plain Error, not the file system's: callers map errno errors to messages about the model's paths.
  const [ts, text] = await Promise.all([import('typescript'), fs.readFile(file, 'utf8')]).catch((err: unknown) => {
    throw new Error(`cannot load the worker source ${file}: ${(err as Error).message}`, { cause: err });
  });
  const { outputText } = ts.transpileModule(text, {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  return outputText;
}
