import { diffLines } from 'diff';
import { useEffect, useState } from 'preact/hooks';
import { api, type WorkspaceFile, type WorkspaceView } from './api';
import { ErrorNote } from './ui';

type FileChange = { path: string; kind: 'added' | 'removed' | 'changed' | 'unchanged'; before?: string; after?: string };

function changes(files: WorkspaceFile[], previous: WorkspaceFile[] | undefined): FileChange[] {
  const before = new Map((previous ?? []).map((f) => [f.path, f.content]));
  const out: FileChange[] = [];
  for (const f of files) {
    const old = before.get(f.path);
    out.push({ path: f.path, kind: old === undefined ? 'added' : old === f.content ? 'unchanged' : 'changed', before: old, after: f.content });
    before.delete(f.path);
  }
  for (const [path, content] of before) out.push({ path, kind: 'removed', before: content });
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

function FileDiff({ change }: { change: FileChange }) {
  const parts = diffLines(change.before ?? '', change.after ?? '');
  return (
    <pre class="diff" tabIndex={0} aria-label={`Changes in ${change.path}`}>
      {parts.map((p, i) => (
        <span key={i} class={p.added ? 'add' : p.removed ? 'del' : 'same'}>
          {p.value
            .replace(/\n$/, '')
            .split('\n')
            .map((line) => `${p.added ? '+' : p.removed ? '-' : ' '} ${line}`)
            .join('\n') + '\n'}
        </span>
      ))}
    </pre>
  );
}

/** The workspace at the end of an iteration, rebuilt from the run's events, with its diff against the iteration before. */
export function WorkspaceDiff({ runId, iteration }: { runId: string; iteration?: number }) {
  const [view, setView] = useState<WorkspaceView | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    // Only the answer for the iteration shown is applied, whatever order the answers come in.
    let current = true;
    api.workspace(runId, iteration).then(
      (v) => current && (setView(v), setError(null)),
      (err) => current && setError(err),
    );
    return () => {
      current = false;
    };
  }, [runId, iteration]);
  if (error) return <ErrorNote error={error} />;
  if (!view) return <p role="status">Loading files…</p>;
  const list = changes(view.files, view.previous?.files);
  const skipped = Object.entries(view.notReproduced);
  return (
    <section aria-label={`Workspace files of iteration ${view.iteration}`} class="workspace">
      <h3>
        Workspace files, iteration {view.iteration}
        {view.previous ? ` (diff against iteration ${view.previous.iteration})` : ''}
      </h3>
      {list.length === 0 ? <p>No files were written.</p> : null}
      {list.map((c) => (
        <details key={c.path} open={c.kind !== 'unchanged'}>
          <summary>
            <span class="mono">{c.path}</span> <span class={`badge change-${c.kind}`}>{c.kind}</span>
          </summary>
          <FileDiff change={c} />
        </details>
      ))}
      {skipped.length > 0 ? <p class="hint">Not reproduced (their effects are not recorded): {skipped.map(([n, k]) => `${n} × ${k}`).join(', ')}.</p> : null}
    </section>
  );
}
