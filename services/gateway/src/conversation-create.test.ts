import { AgentCatalog } from '@flotilla/agent';
import { EventLog } from '@flotilla/log';
import { losingFirstAnswer, type LostWhen } from '@flotilla/log/testing';
import { SnapshotStore } from '@flotilla/state';
import { startNats, uniqueName } from '@flotilla/testing';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ConversationIndex } from './conversation-index.js';
import { ConversationService } from './conversation-service.js';
import { HARNESS_AGENT } from './test-support/gateway-harness.js';

/** A conversation service on a real nats-server whose log loses the answer of the first commit it appends (`losingFirstAnswer`). */
async function fixture(when: LostWhen) {
  const server = await startNats({ preferExternal: false });
  const nc = await connect({ servers: server.url });
  const name = uniqueName('GC');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const snapshots = await SnapshotStore.open(nc);
  const index = new ConversationIndex(snapshots.kv, pino({ level: 'silent' }));
  await index.start();
  const losing = losingFirstAnswer(log, 'state_change', when);
  const service = new ConversationService(
    nc,
    losing.log,
    snapshots,
    index,
    { maxRunning: 10, maxRunningPerTenant: 10 },
    new AgentCatalog(HARNESS_AGENT),
  );
  return {
    log,
    service,
    answersLost: losing.lost,
    async [Symbol.asyncDispose]() {
      index.stop();
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

describe('gateway create: the first commit’s answer lost', () => {
  it.each<LostWhen>(['before_stored', 'after_stored'])(
    'answers created (answer lost %s), with one first commit in the log; a second create of the id gets the existing one',
    async (when) => {
      await using f = await fixture(when);
      const id = uniqueName('conv');
      const first = await f.service.create('acme', { id, message: 'Hello' });
      expect(f.answersLost()).toBe(1);
      expect(first.created).toBe(true);
      const commits = [];
      for await (const commit of f.log.read({ tenant: 'acme', conversation: id }))
        commits.push(commit.events.map((event) => event.type));
      expect(commits).toEqual([['state_change', 'agent_spec', 'message']]);
      const again = await f.service.create('acme', { id, message: 'Hello' });
      expect(again.created).toBe(false);
      expect(again.conversation.id).toBe(id);
    },
  );
});
