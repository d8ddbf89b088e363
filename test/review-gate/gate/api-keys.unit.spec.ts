import { hashSecret, ApiKeyDirectory } from '../../../src/auth/identity';
import {
  decideAddApiKey,
  foldApiKeys,
  InvalidApiKeyError,
  parseKeyRoles,
  validateKeyName,
  type AddApiKey,
} from '../../../src/auth/keys/api-key-events';
import { newApiKeySecret } from '../../../src/auth/keys/api-key-secret';
import { given } from '../../auth/api-key-fixtures';

// Stored API keys: the pure decider and fold, and the directory that holds keys from both sources.

const hashOf = (secret: string) => hashSecret(secret).toString('hex');
const add = (name: string, roles: AddApiKey['roles'], secret = `secret-${name}`): AddApiKey => ({
  name,
  roles,
  secretHash: hashOf(secret),
  addedBy: 'user:root',
  at: '2025-03-01T10:00:00.000Z',
});

describe('api keys: decide and fold', () => {
  it('a new name → ApiKeyAdded with the hash, never the secret', () => {
    given([])
      .when(add('ann', ['operator', 'reviewer'], 'triad_s3cret'))
      .then(({ events }) => {
        expect(events).toEqual([
          { type: 'ApiKeyAdded', data: { name: 'ann', roles: ['operator', 'reviewer'], secretHash: hashOf('triad_s3cret'), addedBy: 'user:root', at: '2025-03-01T10:00:00.000Z' } },
        ]);
        expect(JSON.stringify(events)).not.toContain('triad_s3cret');
      });
  });

  it('a name already stored → ApiKeyReplaced; the latest key of a name wins', () => {
    const { events: first } = given([]).when(add('ann', ['operator'], 'one')).then([{ type: 'ApiKeyAdded' }]);
    const { state } = given(first).when(add('ann', ['reviewer'], 'two')).then([{ type: 'ApiKeyReplaced' }]);
    expect(state.revision).toBe(1);
    expect(state.keys.get('ann')).toMatchObject({ roles: ['reviewer'], secretHash: hashOf('two') });
  });

  it('the fold skips event types it does not know, keeping their revision', () => {
    const [added] = decideAddApiKey(add('ann', ['operator']), foldApiKeys([]));
    const state = foldApiKeys([{ ...added, revision: 0 }, { type: 'ApiKeyRevoked', data: { name: 'ann' }, revision: 1 }]);
    expect(state.revision).toBe(1);
    expect(state.keys.get('ann')).toMatchObject({ roles: ['operator'] });
  });

  it('bad names, roles or hashes are refused', () => {
    given([]).when(add('a b', ['operator'])).thenThrows(InvalidApiKeyError);
    given([]).when(add('ann', [])).thenThrows(InvalidApiKeyError);
    given([]).when(add('ann', ['root' as never])).thenThrows(InvalidApiKeyError);
    given([]).when({ ...add('ann', ['operator']), secretHash: 'plain' }).thenThrows(InvalidApiKeyError);
  });

  it('roles: + or , separated, known roles only, duplicates dropped', () => {
    expect(parseKeyRoles('operator+reviewer')).toEqual(['operator', 'reviewer']);
    expect(parseKeyRoles('operator,reviewer')).toEqual(['operator', 'reviewer']);
    expect(parseKeyRoles('auditor+auditor')).toEqual(['auditor']);
    for (const bad of ['', '+', 'operator+', 'operator,,reviewer', 'owner', 'Operator']) expect(() => parseKeyRoles(bad)).toThrow(InvalidApiKeyError);
  });

  it('names: 1-64 characters of [A-Za-z0-9_.@-]', () => {
    expect(validateKeyName('ann.b@x-1_2')).toBe('ann.b@x-1_2');
    for (const bad of ['', 'a b', 'a:b', 'a,b', 'x'.repeat(65), 'ann\n']) expect(() => validateKeyName(bad)).toThrow(InvalidApiKeyError);
  });

  it('secrets are triad_ + 32 random bytes in base64url', () => {
    const a = newApiKeySecret();
    expect(a).toMatch(/^triad_[A-Za-z0-9_-]{43}$/);
    expect(newApiKeySecret()).not.toBe(a);
  });
});

describe('api keys: the directory', () => {
  it('accepts keys from the environment and from the store; a stored re-add replaces only the stored key', () => {
    const dir = new ApiKeyDirectory([{ name: 'ann', roles: ['operator'], secret: 'env-secret-1' }]);
    dir.addHashed('ann', ['reviewer'], hashSecret('stored-1'), 'store');
    expect(dir.authenticate('env-secret-1')).toEqual({ id: 'user:ann', name: 'ann', roles: ['operator'] });
    expect(dir.authenticate('stored-1')).toEqual({ id: 'user:ann', name: 'ann', roles: ['reviewer'] });
    dir.addHashed('ann', ['auditor'], hashSecret('stored-2'), 'store');
    expect(dir.authenticate('stored-1')).toBeUndefined();
    expect(dir.authenticate('stored-2')?.roles).toEqual(['auditor']);
    expect(dir.authenticate('env-secret-1')?.roles).toEqual(['operator']);
    expect(dir.authenticate('nope')).toBeUndefined();
    expect(dir.size).toBe(2);
  });
});
