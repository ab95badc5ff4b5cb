#!/usr/bin/env -S npx tsx
// The `audit` command: `npx tsx libs/auditor/src/cli.ts --nats nats://127.0.0.1:4222 [--json | --follow]`. All logic is in run-cli.ts.
import { runCli } from './run-cli.js';

const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
process.once('SIGINT', () => stop.abort());
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
  signal: stop.signal,
});
