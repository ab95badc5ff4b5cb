import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, EventLog } from '@flotilla/log';
import { startNats, uniqueName } from '@flotilla/testing';
import { AckPolicy } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { DATABASE_URL_VARIABLE, groupsLeftBehind, launchedServices, tenantChange } from './launcher.js';

describe('groups left behind', () => {
  it("names a consumer group whose service is not launched (the sink's, without DATABASE_URL), with what it has not handled", async () => {
    await using server = await startNats();
    const nc = await connect({ servers: server.url });
    try {
      const name = uniqueName('LEFT');
      const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
      const ref = { tenant: 'acme', conversation: 'c1' };
      await log.append(
        ref,
        [draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] })],
        { expected: EMPTY_TAIL },
      );
      const withoutSink = launchedServices({});
      expect(await groupsLeftBehind(log, withoutSink)).toEqual([]);
      await log.jsm.consumers.add(name, { durable_name: 'pg-sink', ack_policy: AckPolicy.Explicit });
      expect(await groupsLeftBehind(log, withoutSink)).toEqual([{ group: 'pg-sink', pending: 1 }]);
      expect(
        await groupsLeftBehind(log, launchedServices({ [DATABASE_URL_VARIABLE]: 'postgres://127.0.0.1/test' })),
      ).toEqual([]);
    } finally {
      await nc.close();
    }
  });
});

describe('the local key’s tenant', () => {
  it('warns when FLOTILLA_TENANT is not the last launch’s (earlier conversations are another tenant’s then), once per change', async () => {
    const home = await mkdtemp(join(tmpdir(), 'flotilla-tenant-'));
    try {
      expect(await tenantChange(home, 'local')).toBeUndefined();
      expect(await tenantChange(home, 'local')).toBeUndefined();
      expect(await tenantChange(home, 'team')).toMatch(
        /^FLOTILLA_TENANT is team, the last launch's was local: .*launch with FLOTILLA_TENANT=local to see them/,
      );
      expect(await tenantChange(home, 'team')).toBeUndefined();
      expect(await tenantChange(home, 'local')).toMatch(/the last launch's was team/);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
