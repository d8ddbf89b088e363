// The compiled CLI run in-process, in a worker thread of the test process: `runCli(argv, io)` from
// dist/ with string streams of its own, one call at a time (the environment and exit code of a call
// are the thread's). A worker, because jest's module runtime cannot load NestJS's ES modules; plain
// Node in a worker can, once, so every call after the first skips the start-up of a new process.
//
// Messages in: {id, argv, env, stdoutCloseAfterLines?}; out: {id, code, stdout, stderr} or {id, error}.
const { parentPort, workerData } = require('node:worker_threads');
const { Writable } = require('node:stream');
const { runCli } = require(workerData.cliPath);

/** A stream kept as text; after `closeAfterLines` lines its writes fail with EPIPE, as a pipe whose reader left. */
function textStream(closeAfterLines) {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      if (closeAfterLines !== undefined && text.split('\n').length - 1 >= closeAfterLines) {
        done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' }));
        return;
      }
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}

let queue = Promise.resolve();
parentPort.on('message', (msg) => {
  queue = queue.then(async () => {
    const stdout = textStream(msg.stdoutCloseAfterLines);
    const stderr = textStream();
    try {
      const code = await runCli(msg.argv, { stdout: stdout.stream, stderr: stderr.stream, env: msg.env });
      parentPort.postMessage({ id: msg.id, code, stdout: stdout.text(), stderr: stderr.text() });
    } catch (err) {
      parentPort.postMessage({ id: msg.id, error: String((err && err.stack) || err), stdout: stdout.text(), stderr: stderr.text() });
    }
  });
});
