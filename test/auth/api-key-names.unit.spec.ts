import { ApiKeyDirectory, hashSecret } from '../../src/auth/identity';
import { ApiKeyNameConflictError, type AddApiKey, type ApiKeyEvent } from '../../src/auth/keys/api-key-events';
import { normaliseIdentity, normaliseName, sameIdentity } from '../../src/auth/names';
import { ConfigError, parseApiKeys } from '../../src/config/config';
import { given } from './api-key-fixtures';

// Key names are normalised where they enter (NFC, lower case), and two keys whose names differ
// only in case are refused: they would be one identity.

const add = (name: string): AddApiKey => ({ name, roles: ['reviewer'], secretHash: hashSecret(`s-${name}`).toString('hex'), addedBy: 'user:root', at: '2025-03-01T10:00:00.000Z' });
/** A key as `triad keys add` stored it. */
const added = (name: string): ApiKeyEvent => ({ type: 'ApiKeyAdded', data: { ...add(name), name } });
/** A key stored before names were normalised, under a mixed-case name. */
const legacy = (name: string): ApiKeyEvent => ({ type: 'ApiKeyAdded', data: { ...add('x'), name } });

describe('names', () => {
  it('normalise to NFC lower case; only user names fold', () => {
    expect(normaliseName('ALICE')).toBe('alice');
    expect(normaliseName('Zoe\u0301')).toBe('zo\u00e9');
    expect(normaliseIdentity('user:ALICE')).toBe('user:alice');
    expect(normaliseIdentity('USER:Alice')).toBe('user:alice');
    expect(normaliseIdentity('agent:executor:Run_A')).toBe('agent:executor:Run_A');
    expect(sameIdentity('user:Alice', 'user:aLICE')).toBe(true);
    expect(sameIdentity('agent:executor:A', 'agent:executor:a')).toBe(false);
  });
});

describe('TRIAD_API_KEYS', () => {
  it('names are normalised: ALICE is user:alice', () => {
    const [entry] = parseApiKeys('ALICE:reviewer:secret-123');
    expect(entry.name).toBe('alice');
    expect(new ApiKeyDirectory([entry]).authenticate('secret-123')).toMatchObject({ id: 'user:alice', name: 'alice' });
  });

  it('two entries whose names differ only in case are a configuration error', () => {
    expect(() => parseApiKeys('alice:reviewer:secret-123,Alice:operator:secret-456')).toThrow(ConfigError);
    expect(() => parseApiKeys('alice:reviewer:secret-123,Alice:operator:secret-456')).toThrow(/alice.*Alice|case/);
  });
});

describe('triad keys add', () => {
  it('given no key, when ALICE is added, then the key is stored as alice', () => {
    given([]).when(add('ALICE')).then([{ type: 'ApiKeyAdded', data: { name: 'alice' } }]);
  });

  it('given a stored key alice, when alice is added again, then it replaces it', () => {
    given([added('alice')]).when(add('alice')).then([{ type: 'ApiKeyReplaced', data: { name: 'alice' } }]);
  });

  it('given a stored key alice, when ALICE is added, then it is refused as a collision (nothing decided)', () => {
    given([added('alice')]).when(add('ALICE')).thenThrows(ApiKeyNameConflictError);
  });

  it('given a key stored as Alice before names were normalised, then it acts as user:alice and ALICE collides with it', () => {
    given([legacy('Alice')]).when(add('alice')).thenThrows(ApiKeyNameConflictError);
    given([legacy('Alice')]).when(add('Alice')).then([{ type: 'ApiKeyReplaced', data: { name: 'alice' } }]);
    const dir = new ApiKeyDirectory();
    dir.addHashed('Alice', ['reviewer'], hashSecret('legacy-secret'), 'store');
    expect(dir.authenticate('legacy-secret')).toMatchObject({ id: 'user:alice', name: 'alice' });
  });
});
