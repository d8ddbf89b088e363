import type { NewEvent } from '../events/event-store/event-store.port';

/**
 * The events worth a log line — a run's lifecycle and every human decision — as this process
 * records them: one line each, with the run, the actor and the event type as fields (never the
 * event's data, which may hold a tool's input or a key's hash).
 */
const LOGGED = new Set([
  'RunLaunched',
  'RunForked',
  'RunResumed',
  'RunRepinned',
  'RunSuspended',
  'RunEnded',
  'DriverClaimed',
  'ReviewOpened',
  'ReviewDecided',
  'ToolApprovalRequested',
  'ToolApprovalDecided',
  'ApiKeyAdded',
  'ApiKeyReplaced',
]);

export interface EventLogLine {
  message: string;
  fields: { runId?: string; actor?: string; event: string; stream: string };
}

export function eventLogLines(streamId: string, events: readonly NewEvent[]): EventLogLine[] {
  const lines: EventLogLine[] = [];
  for (const e of events) {
    if (!LOGGED.has(e.type)) continue;
    const runId = e.metadata?.runId ?? (streamId.startsWith('run-') ? streamId.slice(4) : undefined);
    const actor = e.metadata?.actor;
    const outcome = (e.data as { outcome?: unknown; status?: unknown; reason?: unknown } | undefined) ?? {};
    const detail = e.type === 'RunEnded' ? ` (${String(outcome.status ?? outcome.reason ?? '')})` : e.type.endsWith('Decided') && typeof outcome.outcome === 'string' ? ` (${outcome.outcome})` : '';
    lines.push({
      message: `${runId ? `run ${runId}: ` : ''}${e.type}${detail}${actor ? ` by ${actor}` : ''}`,
      fields: { ...(runId ? { runId } : {}), ...(actor ? { actor } : {}), event: e.type, stream: streamId },
    });
  }
  return lines;
}
