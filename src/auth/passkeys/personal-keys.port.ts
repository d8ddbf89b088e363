import type { PersonalKey, RegisteredPersonalKey } from '../../attestation/personal-signature';

/**
 * People's registered public keys, as the passkey routes need them: the keys of a name (revoked
 * ones with the position they were revoked from), and registering one. The adapter is the
 * `apikeys` stream's (PublicKeyRegistered).
 */
export interface PersonalKeys {
  keysOf(name: string): Promise<RegisteredPersonalKey[]>;
  register(name: string, key: PersonalKey, registeredBy: string): Promise<void>;
}

export const PERSONAL_KEYS = Symbol('PERSONAL_KEYS');
