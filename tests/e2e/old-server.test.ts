import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MINIMUM_SERVER_VERSION } from '@flotilla/nats-embedded';
import { findOldNatsServer, NatsServerProcess } from '@flotilla/testing';
import { describe, expect, it } from 'vitest';
import { runToExit } from '../support/run-to-exit.js';

// Every process refuses a nats-server older than the minimum at connect, with one line saying
// which version it needs and why (connectBus), instead of failing later on a missing feature.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FLOTILLA = join(ROOT, 'services', 'cli', 'bin', 'flotilla');
const AUDITOR = join(ROOT, 'libs', 'auditor', 'src', 'cli.ts');
const SERVICES = [
  'step-worker',
  'tool-runner',
  'condenser',
  'projector',
  'gateway',
  'webhooks',
  'delegator',
  'pg-sink',
] as const;
const old = findOldNatsServer();

/** The environment of a process pointed at `url` alone: no FLOTILLA_* or NATS_URL of the test's own. */
function environment(url: string, home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('FLOTILLA_') || name === 'NATS_URL') delete env[name];
  return { ...env, FLOTILLA_NATS_URL: url, FLOTILLA_HOME: home };
}

describe.skipIf(old.binary === undefined)(
  `an older nats-server (${old.binary === undefined ? old.reason : old.version})`,
  () => {
    it(`is refused at start by every service, the launcher, the tap and the auditor, each naming ${MINIMUM_SERVER_VERSION}, in one line and exit code non-zero`, async () => {
      await using server = await NatsServerProcess.start({ binary: old.binary! });
      const home = await mkdtemp(join(tmpdir(), 'flotilla-old-server-'));
      try {
        const env = environment(server.url, home);
        const run = (command: string, args: readonly string[]) =>
          runToExit(command, args, { env, cwd: ROOT, timeoutMs: 120_000 });
        const runs: [string, ReturnType<typeof run>][] = [
          ...SERVICES.map((service): [string, ReturnType<typeof run>] => [
            service,
            run(process.execPath, ['--import', 'tsx', join(ROOT, 'services', service, 'src', 'main.ts')]),
          ]),
          [
            'launcher',
            run(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'launcher', 'src', 'main.ts')]),
          ],
          ['tap', run(FLOTILLA, ['tap'])],
          ['audit', run(process.execPath, ['--import', 'tsx', AUDITOR, '--nats', server.url])],
          [
            'audit --follow',
            run(process.execPath, ['--import', 'tsx', AUDITOR, '--follow', '--nats', server.url, '--health-port', '0']),
          ],
        ];
        const refusal = `nats-server ${old.binary === undefined ? '' : old.version} at 127.0.0.1:${server.port} is too old: Flotilla needs nats-server ${MINIMUM_SERVER_VERSION} or newer`;
        for (const [name, running] of runs) {
          const exited = await running;
          const output = `${exited.stdout}${exited.stderr}`;
          expect(exited.code, `${name} exit code; it printed:\n${output}`).not.toBe(0);
          expect(exited.code, `${name} exit code; it printed:\n${output}`).not.toBeNull();
          const lines = output.split('\n').filter((line) => line.trim() !== '');
          // one line, naming the version and what to read; no stack trace
          expect(lines, `${name} printed:\n${output}`).toHaveLength(1);
          // a service logs it as its one pino line (level fatal); the others print it on stderr
          const message = lines[0]!.startsWith('{')
            ? String((JSON.parse(lines[0]!) as { msg?: unknown }).msg)
            : lines[0]!;
          expect(message, name).toContain(refusal);
          expect(message, name).toContain('upgrade it (docs/operations.md, "NATS server version")');
          expect(output, name).not.toMatch(/\n\s+at /);
        }
      } finally {
        await rm(home, { recursive: true, force: true });
      }
    }, 240_000);
  },
);
