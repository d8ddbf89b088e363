import { useEffect, useState } from 'preact/hooks';

/** Hash routes (`#/runs/<id>`): the server serves one page, and a reload keeps the place. */
export type Route =
  | { page: 'runs' }
  | { page: 'run'; runId: string }
  | { page: 'projects' }
  | { page: 'project'; projectId: string }
  | { page: 'reviews' }
  | { page: 'review'; reviewId: string }
  | { page: 'approvals' }
  | { page: 'decisions' }
  | { page: 'passkeys' }
  | { page: 'webhooks' }
  | { page: 'replay'; runId: string };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'runs' && parts[1]) return { page: 'run', runId: parts[1] };
  if (parts[0] === 'replay' && parts[1]) return { page: 'replay', runId: parts[1] };
  if (parts[0] === 'projects' && parts[1]) return { page: 'project', projectId: parts[1] };
  if (parts[0] === 'projects') return { page: 'projects' };
  if (parts[0] === 'reviews' && parts[1]) return { page: 'review', reviewId: parts[1] };
  if (parts[0] === 'reviews') return { page: 'reviews' };
  if (parts[0] === 'approvals') return { page: 'approvals' };
  if (parts[0] === 'decisions') return { page: 'decisions' };
  if (parts[0] === 'passkeys') return { page: 'passkeys' };
  if (parts[0] === 'webhooks') return { page: 'webhooks' };
  return { page: 'runs' };
}

export const href = {
  runs: () => '#/runs',
  run: (id: string) => `#/runs/${encodeURIComponent(id)}`,
  replay: (id: string) => `#/replay/${encodeURIComponent(id)}`,
  projects: () => '#/projects',
  project: (id: string) => `#/projects/${encodeURIComponent(id)}`,
  reviews: () => '#/reviews',
  review: (id: string) => `#/reviews/${encodeURIComponent(id)}`,
  approvals: () => '#/approvals',
  decisions: () => '#/decisions',
  passkeys: () => '#/passkeys',
  webhooks: () => '#/webhooks',
};

export function navigate(to: string): void {
  window.location.hash = to;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
