import { runCliInProcess } from './in-process-cli';

/**
 * `triad keys add <name> --roles <roles>` against a running app's store (the compiled CLI, in
 * process): a stored key for a name, which registering a person's public key needs. Its secret.
 */
export async function addStoredKey(app: { dataDir: string }, name: string, roles: string): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, TRIAD_DATA_DIR: app.dataDir, TRIAD_STORE: 'sqlite', TRIAD_MODEL: 'offline' };
  delete env.TRIAD_PG_URL;
  const res = await runCliInProcess(['keys', 'add', name, '--roles', roles, '--as', 'root', '--json'], env);
  if (res.code !== 0) throw new Error(`triad keys add ${name} exited ${res.code}: ${res.stderr}`);
  return (JSON.parse(res.stdout) as { secret: string }).secret;
}
