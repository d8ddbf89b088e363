import type { ComponentChildren } from 'preact';
import { ApiError } from './api';

/** An error as the person reads it; a refusal (403) says so plainly. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const status = error instanceof ApiError ? error.status : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const prefix = status === 403 ? 'Refused: ' : status === 409 ? 'Conflict: ' : status === 404 ? 'Not found: ' : status === 400 ? 'Not accepted: ' : 'Error: ';
  return (
    <p role="alert" class="error">
      {prefix}
      {message}
      {status !== undefined && status > 0 ? ` (HTTP ${status})` : ''}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p role="status" class="notice">
      {children}
    </p>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status.replace(/_/g, ' ')}</span>;
}

/**
 * A data table: a labelled table with one header row, scrollable on narrow screens. `columns` may
 * hold null for a column the person may not see (an action they may not take).
 */
export function Table({ label, columns, children }: { label: string; columns: Array<string | null>; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) =>
              c === null ? null : (
                <th scope="col" key={c}>
                  {c}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export const fmtTime = (iso?: string): string => (iso ? new Date(iso).toLocaleString(undefined, { hour12: false }) : '—');
export const fmtUsd = (n: number): string => `$${n.toFixed(4)}`;
export const fmtInt = (n: number): string => n.toLocaleString('en-US');

export function Json({ value, label }: { value: unknown; label?: string }) {
  return (
    <pre class="json" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}
