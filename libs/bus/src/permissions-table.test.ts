import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { chartNatsValues, passwordVariable, replacePermissionsBlock } from './permissions-table.js';

const file = (path: string): string => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

describe('what is derived from the permission matrix (npm run generate:nats rewrites it)', () => {
  it('docs/operations.md carries the current matrix', async () => {
    const document = await readFile(file('docs/operations.md'), 'utf8');
    expect(replacePermissionsBlock(document)).toBe(document);
  });

  it('the chart carries the current values for the official NATS chart', async () => {
    expect(JSON.parse(await readFile(file('helm/flotilla/files/nats-values.json'), 'utf8'))).toEqual(chartNatsValues());
  });

  it('a nats-server configured as the official chart renders those values refuses anonymous clients and confines each user', async () => {
    const values = JSON.parse(await readFile(file('helm/flotilla/files/nats-values.json'), 'utf8')) as ReturnType<
      typeof chartNatsValues
    >;
    const merge = (values.config as { merge: { authorization: { users: { user: string }[] } } }).merge;
    // the chart writes `<< $VAR >>` unquoted: nats-server reads the variable from its environment (the
    // Secret) and parses its value as a config token, so a value must not read as a number: a letter
    // first (a random base64url one starting `4b…` stopped the server; docs/operations.md says so)
    const passwords = new Map(
      merge.authorization.users.map(({ user }) => [user, `p${randomBytes(24).toString('hex')}`]),
    );
    for (const [user, password] of passwords) process.env[passwordVariable(user)] = password;
    const config = `authorization: ${JSON.stringify(merge.authorization).replace(/"<< (\$[A-Z_]+) >>"/g, '$1')}\n`;
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-chart-nats-'));
    try {
      await using server = await NatsServerProcess.start({ storeDir: join(dir, 'store'), config });
      await expect(connect({ servers: server.url, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
      const worker = await connect({
        servers: server.url,
        user: 'step-worker',
        pass: passwords.get('step-worker')!,
        inboxPrefix: '_INBOX.step-worker',
        maxReconnectAttempts: 0,
      });
      const jsm = await jetstreamManager(worker);
      await jsm.streams.add({ name: 'FLOTILLA_EVENTS', subjects: ['flotilla.ev.*.*'] });
      await expect(jsm.streams.purge('FLOTILLA_EVENTS')).rejects.toThrow(/permission/i);
      await worker.close();
    } finally {
      for (const user of passwords.keys()) delete process.env[passwordVariable(user)];
      await rm(dir, { recursive: true, force: true });
    }
  });
});
