import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { GuardedAction } from '../../src/http/api-types';
import type { SignedInView } from './api';
import { MAY } from '../../src/auth/roles';

export const SessionContext = createContext<SignedInView | null>(null);

export function useSession(): SignedInView {
  const s = useContext(SessionContext);
  if (!s) throw new Error('no session');
  return s;
}

/** The same role table the server guards its routes with: the page shows only what its user may do. */
export function may(session: SignedInView, action: GuardedAction): boolean {
  const roles = session.identity.roles;
  return roles.includes('admin') || MAY[action].some((r) => roles.includes(r));
}

export function useMay(action: GuardedAction): boolean {
  return may(useSession(), action);
}
