// Rows of the events table read per run, with N serving processes sharing one PostgreSQL schema.
// Each process (test/support/crash-child.js over <repo>/dist) launches K runs of the offline
// model; once every run waits at the human gate, the processes stop. Counted in each process (a
// hook on pg's Client.query): the event rows its queries returned, i.e. what the process read.
// (The server's own counters, pg_stat_user_tables, are no measure here: on a table this small the
// planner scans it whole for most queries.)
//
//   node scripts/multiproc-reads.js [repo=.] [processes=1] [runsPerProcess=4]
//
// TRIAD_PG_URL as for the tests. The counters include each process's start (an empty schema).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('pg');

const repo = path.resolve(process.argv[2] || '.');
const processes = Number(process.argv[3] || 1);
const runsEach = Number(process.argv[4] || 4);
const url = process.env.TRIAD_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const schema = `triad_reads_${process.pid}_${Date.now().toString(36)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Preloaded in each process: counts the rows of `events` its queries return, written at exit. */
const HOOK = `
const pg = require(process.env.ROWS_PG);
const byQuery = {};
let rows = 0;
const note = (text, res) => {
  const tail = /^SELECT h\\.head, e\\.\\*/.test(text);
  if ((!tail && !/^SELECT id, stream_id, revision, position/.test(text)) || !res || !res.rows) return;
  // The shared tail's filtered read returns one row without an event when nothing matched.
  const n = tail ? res.rows.filter((r) => r.id !== null).length : res.rows.length;
  rows += n;
  const key = (tail ? 'shared tail: ' : '') + (/WHERE (.*?)(ORDER|LIMIT|$)/.exec(text)?.[1].replace(/"[^"]*"\\./g, '').trim().slice(0, 60) || text.slice(0, 60));
  byQuery[key] = (byQuery[key] || 0) + n;
};
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, cb) {
  const text = String(typeof config === 'string' ? config : (config && config.text) || '').replace(/\\s+/g, ' ');
  if (typeof values === 'function') { const f = values; values = (e, r) => { note(text, r); f(e, r); }; }
  else if (typeof cb === 'function') { const f = cb; cb = (e, r) => { note(text, r); f(e, r); }; }
  const r = query.call(this, config, values, cb);
  if (r && typeof r.then === 'function') r.then((res) => note(text, res), () => undefined);
  return r;
};
process.on('exit', () => require('fs').appendFileSync(process.env.ROWS_LOG, JSON.stringify({ pid: process.pid, rows, byQuery }) + '\\n'));
`;

async function main() {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'triad-reads-'));
  const log = path.join(dir, 'events.log');
  const counts = path.join(dir, 'rows.jsonl');
  const hook = path.join(dir, 'hook.js');
  fs.writeFileSync(hook, HOOK);
  const children = [];
  try {
    for (let p = 0; p < processes; p++) {
      const launches = Array.from({ length: runsEach }, (_, i) => ({ goal: `p${p} run ${i}`, acceptanceCriteria: ['file alpha.txt contains "alpha"', 'file beta.txt exists'] }));
      const child = spawn(process.execPath, [path.join(repo, 'test/support/crash-child.js')], {
        env: {
          ...process.env,
          TRIAD_MODEL: 'offline',
          ANTHROPIC_API_KEY: '',
          TRIAD_STORE: 'postgres',
          TRIAD_PG_URL: url,
          TRIAD_PG_SCHEMA: schema,
          TRIAD_DATA_DIR: path.join(dir, `p${p}`),
          CRASH_LATENCY_MS: '1-3',
          CRASH_EVENTS_LOG: log,
          CRASH_LAUNCH: JSON.stringify(launches),
          NODE_OPTIONS: `--require ${hook}`,
          ROWS_LOG: counts,
          ROWS_PG: require.resolve('pg', { paths: [repo] }),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
    }
    const runs = processes * runsEach;
    for (;;) {
      const gates = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"type":"ReviewOpened"')).length : 0;
      if (gates >= runs) break;
      await sleep(200);
    }
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r)))));
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".events`);
    const perProcess = fs.readFileSync(counts, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const read = perProcess.reduce((n, p) => n + p.rows, 0);
    const byQuery = {};
    for (const p of perProcess) for (const [k, v] of Object.entries(p.byQuery)) byQuery[k] = (byQuery[k] || 0) + v;
    process.stdout.write(
      `${JSON.stringify({ processes, runs, eventsWritten: rows[0].n, rowsRead: read, rowsReadPerRun: +(read / runs).toFixed(1), rowsReadPerProcess: perProcess.map((p) => p.rows), byQuery })}\n`,
    );
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
