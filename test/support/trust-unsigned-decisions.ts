import { installDecisionTrust } from '../../src/attestation/decision-trust';

/**
 * Folds in the test process act on decisions as written: the pure specs build decision events by
 * hand, with no server key. Apps the tests start (dist/, another process) install their own trust
 * from their signing key, and the specs of attestation itself install a KeyTrust.
 */
installDecisionTrust({ refusal: () => undefined });
