import { Writable } from 'node:stream';
import { recordFrom } from '../../../src/review-gate/decision-log/chain';
import { csvField, csvHeader, csvRow, ndjsonLine, parseCsv, writeExport } from '../../../src/review-gate/decision-log/decision-export';
import { DECISION_RECORD_FIELDS } from '../../../src/review-gate/decision-log/decision-record';
import { chainOf, decisionEvent, decisionEvents } from './fixtures';

describe('CSV export', () => {
  it.each([
    ['plain', 'plain'],
    ['with, comma', '"with, comma"'],
    ['with "quotes"', '"with ""quotes"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\r', '"cr\r"'],
    ['', ''],
  ])('quotes %j only when it must', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  it('joins arrays with " | ", writes numbers as they are, absent values empty', () => {
    expect(csvField(['a', 'b, c', 'd'])).toBe('"a | b, c | d"');
    expect(csvField([])).toBe('');
    expect(csvField(42)).toBe('42');
    expect(csvField(undefined)).toBe('');
  });

  it('a header row of the record fields, then one CRLF-terminated row per record that parses back', () => {
    const records = chainOf([decisionEvent(1, { reason: 'a "b",\r\nc' }), decisionEvent(2, { policy: 'auto_deny', decider: 'system', deciderKind: 'system' })]);
    const text = csvHeader() + records.map(csvRow).join('');
    expect(text.startsWith(`${DECISION_RECORD_FIELDS.join(',')}\r\n`)).toBe(true);
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual([...DECISION_RECORD_FIELDS]);
    expect(rows.map((r) => r[header.indexOf('reason')])).toEqual(['a "b",\r\nc', records[1].reason]);
    expect(rows.map((r) => r[header.indexOf('policy')])).toEqual(['', 'auto_deny']);
    expect(rows[0][header.indexOf('acceptanceCriteria')]).toBe('file hello.txt contains "Hello" | tests | pass');
  });
});

describe('NDJSON export', () => {
  it('one JSON object per line', () => {
    const r = recordFrom(decisionEvent(1, { reason: 'line\nbreak' }), null);
    const line = ndjsonLine(r);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual(r);
  });
});

describe('writeExport', () => {
  async function* gen<T>(items: T[]) {
    yield* items;
  }

  it('streams every record in chunks and honours backpressure', async () => {
    const records = chainOf(decisionEvents(300));
    const chunks: string[] = [];
    const out = new Writable({
      highWaterMark: 1024,
      write(chunk, _enc, done) {
        chunks.push(String(chunk));
        setImmediate(done);
      },
    });
    expect(await writeExport(gen(records), 'ndjson', out, 2048)).toBe(300);
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.join('').trim().split('\n').map((l) => JSON.parse(l))).toEqual(records);
  });

  it('rejects when the stream fails', async () => {
    const out = new Writable({
      highWaterMark: 16,
      write(_chunk, _enc, done) {
        done(new Error('disk full'));
      },
    });
    out.on('error', () => undefined);
    await expect(writeExport(gen(chainOf(decisionEvents(500))), 'csv', out, 64)).rejects.toThrow('disk full');
  });
});
