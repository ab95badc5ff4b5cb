// The `flotilla` command (bin/flotilla runs this under tsx). All logic is in run-cli.ts.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { FlotillaClient } from '@flotilla/client';
import { NodeWebSocket } from '@flotilla/client/node';
import { configFile } from './connection.js';
import { runCli } from './run-cli.js';
import { readStdinText, readStdinValue } from './stdin-value.js';

const interrupted = new AbortController();
/** Set by a command that finishes on its own once interrupted (a named tap acknowledges what it printed). */
let finishesOnInterrupt = false;
const onInterrupt = (): void => {
  if (interrupted.signal.aborted) process.exit(130); // asked twice: now
  interrupted.abort(); // a watch ends cleanly (spinner erased, line ended) …
  if (!finishesOnInterrupt) setImmediate(() => process.exit(130)); // … and anything else stops now
};
process.on('SIGINT', onInterrupt);
process.on('SIGTERM', onInterrupt);
// `flotilla tail ID | head` closes the pipe early: that is not an error
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  readConfig: () => {
    try {
      return readFileSync(configFile(process.env), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  },
  createClient: ({ url, apiKey }) => new FlotillaClient({ baseUrl: url, apiKey, WebSocket: NodeWebSocket }),
  signal: interrupted.signal,
  finishOnInterrupt: () => {
    finishesOnInterrupt = true;
  },
  input: {
    readStdin: (prompt) => readStdinValue(prompt, process.stdin, process.stderr),
    readStdinText: () =>
      readStdinText(process.stdin, process.stderr, 'Type the message, then Ctrl-D on a line of its own to send it.\n'),
    readFile: (path) => readFile(path, 'utf8'),
    readBytes: (path) => readFile(path),
  },
});
// exit once stdout is flushed, without waiting for sockets to finish closing
process.stdout.write('', () => process.exit(code));
