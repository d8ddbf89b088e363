import { useEffect, useState } from 'preact/hooks';
import type { GuardedAction } from '../../src/http/api-types';
import { api, ApiError, onSignedOut, type SignedInView } from './api';
import { href, useRoute } from './router';
import { may, SessionContext } from './session';
import { ErrorNote } from './ui';
import { RunsPage } from './pages/runs';
import { RunPage } from './pages/run';
import { ReviewsPage } from './pages/reviews';
import { ReviewPage } from './pages/review';
import { ProjectPage, ProjectsPage } from './pages/projects';
import { ApprovalsPage } from './pages/approvals';
import { DecisionsPage } from './pages/decisions';
import { ReplayPage } from './pages/replay';
import { PasskeysPage } from './pages/passkeys';
import { WebhooksPage } from './pages/webhooks';

function SignIn({ onSignedIn, expired }: { onSignedIn: (s: SignedInView) => void; expired: boolean }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.signIn(key));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>triad console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        {expired ? <p role="status">Your session has ended. Sign in again.</p> : null}
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="current-password" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        <button type="submit" disabled={busy || key === ''}>
          Sign in
        </button>
        <p class="hint">The key is exchanged for a session cookie; the page never stores it.</p>
        <ErrorNote error={error} />
      </form>
    </main>
  );
}

/** The pages only some roles may use: shown in the navigation, and opened by address, for those roles alone. */
const PAGE_NEEDS: Partial<Record<string, GuardedAction>> = { reviews: 'review', approvals: 'decideToolCalls', decisions: 'audit' };

const mayOpen = (session: SignedInView, page: string): boolean => {
  const needs = PAGE_NEEDS[page];
  return needs === undefined || may(session, needs);
};

function Nav({ session, page }: { session: SignedInView; page: string }) {
  const links: Array<[string, string, string, boolean]> = [
    ['runs', 'Runs', href.runs(), true],
    ['projects', 'Projects', href.projects(), true],
    ['reviews', 'Reviews', href.reviews(), mayOpen(session, 'reviews')],
    ['approvals', 'Tool approvals', href.approvals(), mayOpen(session, 'approvals')],
    ['decisions', 'Decision log', href.decisions(), mayOpen(session, 'decisions')],
    ['passkeys', 'Passkeys', href.passkeys(), true],
    ['webhooks', 'Webhooks', href.webhooks(), may(session, 'manageWebhooks')],
  ];
  const current = page === 'run' || page === 'replay' ? 'runs' : page === 'project' ? 'projects' : page === 'review' ? 'reviews' : page;
  return (
    <nav aria-label="Main">
      <ul>
        {links
          .filter(([, , , shown]) => shown)
          .map(([key, label, to]) => (
            <li key={key}>
              <a href={to} aria-current={current === key ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
      </ul>
    </nav>
  );
}

export function App() {
  const [session, setSession] = useState<SignedInView | null | undefined>(undefined);
  const [expired, setExpired] = useState(false);
  const route = useRoute();

  useEffect(() => {
    api.session().then(
      (view) => setSession(view.signedIn ? view : null),
      (err) => {
        if (!(err instanceof ApiError && err.status === 401)) console.error(err);
        setSession(null);
      },
    );
    return onSignedOut(() => {
      setExpired(true);
      setSession(null);
    });
  }, []);

  if (session === undefined) return <p role="status">Loading…</p>;
  if (session === null)
    return (
      <SignIn
        expired={expired}
        onSignedIn={(s) => {
          setExpired(false);
          setSession(s);
        }}
      />
    );

  const signOut = async () => {
    await api.signOut().catch(() => undefined);
    setSession(null);
  };

  return (
    <SessionContext.Provider value={session}>
      <header class="top">
        <a class="brand" href={href.runs()}>
          triad
        </a>
        <Nav session={session} page={route.page} />
        <div class="who">
          <span aria-label="Signed in as">
            {session.identity.name} <small>({session.identity.roles.join(', ')})</small>
          </span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">
        {!mayOpen(session, route.page) ? <p role="alert">This page is not for your roles ({session.identity.roles.join(', ')}).</p> : null}
        {route.page === 'runs' ? <RunsPage /> : null}
        {route.page === 'run' ? <RunPage key={route.runId} runId={route.runId} /> : null}
        {route.page === 'projects' ? <ProjectsPage /> : null}
        {route.page === 'project' ? <ProjectPage key={route.projectId} projectId={route.projectId} /> : null}
        {route.page === 'reviews' && mayOpen(session, 'reviews') ? <ReviewsPage /> : null}
        {route.page === 'review' ? <ReviewPage key={route.reviewId} reviewId={route.reviewId} /> : null}
        {route.page === 'approvals' && mayOpen(session, 'approvals') ? <ApprovalsPage /> : null}
        {route.page === 'decisions' && mayOpen(session, 'decisions') ? <DecisionsPage /> : null}
        {route.page === 'passkeys' ? <PasskeysPage /> : null}
        {route.page === 'webhooks' ? <WebhooksPage /> : null}
        {route.page === 'replay' ? <ReplayPage key={route.runId} runId={route.runId} /> : null}
      </main>
    </SessionContext.Provider>
  );
}
