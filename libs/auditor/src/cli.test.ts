import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventLog } from '@flotilla/log';
import { jetstream } from '@nats-io/jetstream';
import { cleanConversation, draftsFor } from './test-support/drafts.js';
import { appendAll, auditFixture, type AuditFixture } from './test-support/nats-fixture.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));
const tsx = fileURLToPath(new URL('../../../node_modules/.bin/tsx', import.meta.url));

type Run = { code: number | null; stdout: string; stderr: string };

function runCli(args: readonly string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    // a home with no local system's tap.json: only what the test gives names a server
    const child = spawn(tsx, [cli, ...args], {
      cwd: root,
      env: {
        ...process.env,
        NATS_URL: '',
        FLOTILLA_NATS_URL: '',
        FLOTILLA_HOME: join(tmpdir(), 'flotilla-audit-test-no-home'),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let fixture: AuditFixture;
let clean: EventLog;
let dirty: EventLog;

function target(log: EventLog): string[] {
  return ['--nats', fixture.server.url, '--stream', log.streamName, '--prefix', log.subjectPrefix];
}

beforeAll(async () => {
  fixture = await auditFixture();
  clean = await fixture.openLog();
  dirty = await fixture.openLog();
  for (const log of [clean, dirty]) {
    for (const conversation of ['c1', 'c2']) {
      const ref = { tenant: 'acme', conversation };
      await appendAll(log, ref, cleanConversation(draftsFor(ref)));
    }
  }
  await jetstream(fixture.nc).publish(dirty.subject({ tenant: 'acme', conversation: 'c2' }), 'not a commit');
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

describe('the audit CLI', () => {
  it('exits 0 and prints one OK line per conversation on a clean stream', async () => {
    const run = await runCli(target(clean));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^OK {4}acme\/c1 /m);
    expect(run.stdout).toMatch(/^OK {4}acme\/c2 /m);
    expect(run.stdout).toContain('audited 2 conversation(s)');
  });

  it('exits 1 and names the violation when one is found', async () => {
    const run = await runCli(target(dirty));
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^OK {4}acme\/c1 /m);
    expect(run.stdout).toMatch(/^FAIL {2}acme\/c2 {2}1 violation/m);
    expect(run.stdout).toMatch(/- invalid-message \(stream #\d+\): foreign message/);
    const one = await runCli([...target(dirty), '--tenant', 'acme', '--conversation', 'c1']);
    expect(one.code).toBe(0);
  });

  it('prints JSON with --json', async () => {
    const run = await runCli([...target(dirty), '--json']);
    expect(run.code).toBe(1);
    const output = JSON.parse(run.stdout) as {
      conversations: number;
      failed: number;
      violations: number;
      reports: { violations: { rule: string }[] }[];
    };
    expect(output).toMatchObject({ conversations: 2, failed: 1, violations: 1 });
    expect(output.reports[1]!.violations[0]!.rule).toBe('invalid-message');
  });

  it('exits 2 on usage errors, with a message that says what to fix', async () => {
    const missing = await runCli([]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no NATS server: pass --nats');
    const orphan = await runCli(['--nats', fixture.server.url, '--conversation', 'c1']);
    expect(orphan.code).toBe(2);
    expect(orphan.stderr).toContain('--conversation needs --tenant');
  });

  it('exits 3 when the stream does not exist', async () => {
    const run = await runCli(['--nats', fixture.server.url, '--stream', 'NO_SUCH_STREAM']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('stream NO_SUCH_STREAM does not exist');
  });
});
