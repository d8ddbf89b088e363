import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { INestApplicationContext } from '@nestjs/common';
import type { Command } from 'commander';
import { API_KEYS_STREAM, foldApiKeys } from '../auth/keys/api-key-events';
import { hasRole, ApiKeyDirectory, type Identity } from '../auth/identity';
import { MAY, type GuardedAction } from '../auth/roles';
import { SSH_NAMESPACE, statementText, type DecisionStatement } from '../attestation/personal-signature';
import { sshKeyFingerprint } from '../attestation/ssh-signature';
import { EVENT_STORE, type EventStore } from '../events/event-store/event-store.port';
import type { Decider } from '../review-gate/domain/review-decider';
import { CliError, EXIT } from './exit-codes';
import { userName } from './options';

/**
 * Who decides at the CLI, proven: by their API key (TRIAD_API_KEY or --key-file, checked against
 * the store's keys and TRIAD_API_KEYS, as the HTTP API checks a bearer key) or by their own SSH
 * signature on the decision (--sign-with, a key registered to them with `triad keys add
 * --public-key`). A name alone (--as, TRIAD_USER, the OS account) proves nothing and decides
 * nothing.
 */

export interface CredentialOptions {
  as?: string;
  keyFile?: string;
  signWith?: string;
}

export function withCredentialOptions(cmd: Command): Command {
  return cmd
    .option('--key-file <file>', 'your API key, read from this file (default: the TRIAD_API_KEY variable)')
    .option('--sign-with <key>', 'sign the decision with this SSH key (private key file, or a public key held by ssh-agent) registered to you')
    .option('--as <user>', 'check that the credential is this user’s (the decider is always the credential’s holder)');
}

export async function cliDecider(
  app: INestApplicationContext,
  opts: CredentialOptions,
  action: GuardedAction,
  statement: () => Promise<DecisionStatement>,
): Promise<Decider> {
  // A name that cannot be anyone's is bad input, as everywhere else --as is given.
  const asName = opts.as === undefined ? undefined : userName(opts.as);
  const secret = apiKeySecret(opts.keyFile);
  if (secret === undefined && opts.signWith === undefined) {
    throw new CliError(
      `deciding needs a credential: set TRIAD_API_KEY or pass --key-file (your API key), or --sign-with <ssh key> (your registered SSH key)${opts.as !== undefined ? '; --as alone proves nothing' : ''}`,
      EXIT.forbidden,
    );
  }
  let identity: Identity | undefined;
  if (secret !== undefined) {
    identity = app.get(ApiKeyDirectory).authenticate(secret);
    if (!identity) throw new CliError('the API key is not valid (not one of TRIAD_API_KEYS, nor stored with `triad keys add`)', EXIT.forbidden);
  }
  let signature: { type: 'ssh'; signature: string } | undefined;
  let signer: string | undefined;
  if (opts.signWith !== undefined) {
    signature = { type: 'ssh', signature: await sshSign(opts.signWith, statementText(await statement())) };
    const fingerprint = sshKeyFingerprint(signature.signature);
    const owner = foldApiKeys(await app.get<EventStore>(EVENT_STORE).readStream(API_KEYS_STREAM)).publicKeys.find((k) => k.key.type === 'ssh' && k.key.keyId === fingerprint && k.revokedFrom === undefined);
    if (!owner) throw new CliError(`the SSH key ${fingerprint ?? opts.signWith} is registered to nobody (triad keys add <name> --roles … --public-key <file.pub>)`, EXIT.forbidden);
    signer = owner.name;
    if (identity && identity.name !== signer) throw new CliError(`the API key is ${identity.name}'s but the SSH key is registered to ${signer}`, EXIT.forbidden);
    identity ??= app.get(ApiKeyDirectory).identityOf(signer);
    if (!identity) throw new CliError(`${signer}, the SSH key's holder, has no API key (and so no role)`, EXIT.forbidden);
  }
  const who = identity!;
  if (asName !== undefined && asName !== who.name) throw new CliError(`--as names ${opts.as}, but the credential is ${who.name}'s`, EXIT.forbidden);
  if (!hasRole(who, ...MAY[action])) throw new CliError(`${who.name} may not decide this: it needs the role ${MAY[action].join(' or ')}`, EXIT.forbidden);
  return { id: who.id, kind: 'human', proof: signature ? { via: 'signature', signature } : { via: 'api_key' } };
}

/**
 * The identity of an API key given at the CLI, for a human decision no personal signature covers
 * yet (a project's review): the key is required, and its holder must have the role.
 */
export function cliKeyHolder(app: INestApplicationContext, opts: Omit<CredentialOptions, 'signWith'>, action: GuardedAction): Identity {
  const asName = opts.as === undefined ? undefined : userName(opts.as);
  const secret = apiKeySecret(opts.keyFile);
  if (secret === undefined) throw new CliError('deciding needs a credential: set TRIAD_API_KEY or pass --key-file (your API key); --as alone proves nothing', EXIT.forbidden);
  const who = app.get(ApiKeyDirectory).authenticate(secret);
  if (!who) throw new CliError('the API key is not valid (not one of TRIAD_API_KEYS, nor stored with `triad keys add`)', EXIT.forbidden);
  if (asName !== undefined && asName !== who.name) throw new CliError(`--as names ${opts.as}, but the credential is ${who.name}'s`, EXIT.forbidden);
  if (!hasRole(who, ...MAY[action])) throw new CliError(`${who.name} may not decide this: it needs the role ${MAY[action].join(' or ')}`, EXIT.forbidden);
  return who;
}

function apiKeySecret(keyFile: string | undefined): string | undefined {
  if (keyFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(keyFile, 'utf8');
    } catch (err) {
      throw new CliError(`cannot read --key-file ${keyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.usage);
    }
    const secret = text.trim();
    if (secret === '' || /\s/.test(secret)) throw new CliError(`--key-file ${keyFile} must hold one API key and nothing else`, EXIT.usage);
    return secret;
  }
  const env = process.env.TRIAD_API_KEY?.trim();
  return env === undefined || env === '' ? undefined : env;
}

/** `ssh-keygen -Y sign`, as git signs commits: the key file or a key in ssh-agent. */
function sshSign(key: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('ssh-keygen', ['-Y', 'sign', '-n', SSH_NAMESPACE, '-q', '-f', key], { timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) {
        const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'ssh-keygen is not installed (OpenSSH 8.1 or later signs)' : stderr.trim().split('\n').pop() || err.message;
        reject(new CliError(`signing with ${key} failed: ${why}`, EXIT.usage));
        return;
      }
      resolve(stdout);
    });
    child.stdin?.end(text);
  });
}
