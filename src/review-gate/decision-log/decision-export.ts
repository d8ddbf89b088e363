import type { Writable } from 'node:stream';
import { DECISION_RECORD_FIELDS, type DecisionRecord } from './decision-record';

/**
 * Export formats of the decision log, pure. NDJSON: one record per line, as JSON. CSV (RFC 4180):
 * a header row of the record's field names, CRLF line ends, a field quoted when it holds a quote,
 * comma, CR or LF (quotes doubled); arrays joined with ' | '; an absent field is empty.
 */

export type ExportFormat = 'json' | 'ndjson' | 'csv';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['json', 'ndjson', 'csv'];

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

export function ndjsonLine(record: DecisionRecord): string {
  return `${JSON.stringify(record)}\n`;
}

export const CSV_ARRAY_SEPARATOR = ' | ';

export function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = Array.isArray(value) ? value.map((v) => String(v)).join(CSV_ARRAY_SEPARATOR) : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvHeader(): string {
  return `${DECISION_RECORD_FIELDS.join(',')}\r\n`;
}

export function csvRow(record: DecisionRecord): string {
  return `${DECISION_RECORD_FIELDS.map((f) => csvField(record[f])).join(',')}\r\n`;
}

/** Parses CSV as written by `csvRow` (RFC 4180: quoted fields, doubled quotes, CRLF or LF). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/**
 * Writes records to a stream as NDJSON or CSV, in chunks, honouring backpressure; resolves with
 * the number of records written, rejects when the stream fails. (The HTTP route streams the same
 * lines to its response.)
 */
export async function writeExport(records: AsyncIterable<DecisionRecord>, format: 'ndjson' | 'csv', out: Writable, chunkBytes = 64 * 1024): Promise<number> {
  let failed: Error | undefined;
  let wake: (() => void) | undefined;
  const onError = (err: Error) => {
    failed = err;
    wake?.();
  };
  out.on('error', onError);
  const flush = async (text: string) => {
    if (failed || out.errored) throw failed ?? out.errored;
    if (text === '' || out.write(text)) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
      out.once('drain', resolve);
    });
    out.removeListener('drain', wake!);
    wake = undefined;
    if (failed) throw failed;
  };
  try {
    let chunk = format === 'csv' ? csvHeader() : '';
    let n = 0;
    for await (const r of records) {
      chunk += format === 'csv' ? csvRow(r) : ndjsonLine(r);
      n++;
      if (chunk.length >= chunkBytes) {
        await flush(chunk);
        chunk = '';
      }
    }
    await flush(chunk);
    return n;
  } finally {
    out.removeListener('error', onError);
  }
}
