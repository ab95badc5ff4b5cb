import { setTimeout as sleep } from 'node:timers/promises';
import { readSubject } from '@flotilla/auditor';
import { draftEvent, type EventDraft } from '@flotilla/events';
import { appendWithRetry, EventLog, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { NatsCluster } from '@flotilla/nats-embedded';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';

const CONVERSATIONS = 16;
const WRITERS_PER_CONVERSATION = 2;
const EVENTS_PER_CONVERSATION = 150;

function note(ref: ConversationRef, text: string): EventDraft {
  return draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] });
}

/**
 * One of the writers (each on a connection of its own) that keep appending to a conversation,
 * each deciding from the tail it read, until the conversation holds EVENTS_PER_CONVERSATION
 * events; each commit an append returned is pushed to `appended`.
 */
async function write(log: EventLog, ref: ConversationRef, writer: number, appended: StoredCommit[]): Promise<void> {
  for (let round = 0; ; round += 1) {
    const commit = await appendWithRetry(
      log,
      ref,
      (tail) => (tail.lastSeq >= EVENTS_PER_CONVERSATION ? null : [note(ref, `${writer}.${round}`)]),
      { transientBudgetMs: 60_000, maxConflicts: 1_000 },
    );
    if (commit === null) return;
    appended.push(commit);
  }
}

describe('appends on a 3-node JetStream cluster (R3)', () => {
  it('store every acknowledged commit once, at the position it was decided for, when the stream’s leader is SIGKILLed under contending writers', async () => {
    await using cluster = await NatsCluster.start();
    const connections: NatsConnection[] = [];
    const open = async (): Promise<EventLog> => {
      const nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
      connections.push(nc);
      return await EventLog.open(nc, { replicas: 3, appendTimeoutMs: 1_000 });
    };
    try {
      const log = await open();
      const refs: ConversationRef[] = Array.from({ length: CONVERSATIONS }, (_, index) => ({
        tenant: 'acme',
        conversation: `failover-${index}`,
      }));
      const writers = await Promise.all(
        refs.flatMap((ref) =>
          Array.from({ length: WRITERS_PER_CONVERSATION }, async (_, writer) => ({ ref, log: await open(), writer })),
        ),
      );
      const appended: StoredCommit[] = [];
      const running = writers.map(({ ref, log: writerLog, writer }) => write(writerLog, ref, writer, appended));

      // the leader dies while the writers are busy: once an eighth of the commits are in (a fixed
      // wait let them finish half before it on a quiet machine)
      await expect
        .poll(() => appended.length, { timeout: 30_000, interval: 10 })
        .toBeGreaterThanOrEqual((CONVERSATIONS * EVENTS_PER_CONVERSATION) / 8);
      const leader = await cluster.streamLeader(log.streamName);
      const beforeKill = appended.length;
      await cluster.kill(leader);
      expect(await cluster.streamLeader(log.streamName, 30_000)).not.toBe(leader);
      await sleep(2_000);
      await cluster.restart(leader);
      await Promise.all(running);
      await cluster.waitCurrent(log.streamName, 60_000);

      const problems: string[] = [];
      for (const ref of refs) {
        const stored: StoredCommit[] = [];
        for await (const entry of readSubject(log, ref)) {
          if (entry.kind === 'commit') stored.push(entry.commit);
          else problems.push(`${ref.conversation} #${entry.message.streamSeq}: ${entry.message.reason}`);
        }
        // every position once, in order: no commit was stored twice or on a tail that had moved
        const positions = stored.flatMap((commit) => commit.events.map((event) => event.seq));
        if (positions.join() !== Array.from({ length: positions.length }, (_, index) => index + 1).join())
          problems.push(
            `${ref.conversation} positions ${positions.join(' ')} (${stored.map((commit) => `#${commit.streamSeq} ${commit.id}`).join(', ')})`,
          );
        const ids = stored.map((commit) => commit.id);
        if (new Set(ids).size !== ids.length) problems.push(`${ref.conversation}: a commit id stored twice`);
        // every commit an append returned is stored where it said
        const where = new Map(stored.map((commit) => [commit.id, commit.streamSeq]));
        for (const commit of appended.filter((entry) => entry.conversation === ref.conversation))
          if (where.get(commit.id) !== commit.streamSeq)
            problems.push(
              `${ref.conversation}: ${commit.id} returned at #${commit.streamSeq}, stored at #${where.get(commit.id)}`,
            );
        expect(positions.length, ref.conversation).toBeGreaterThanOrEqual(EVENTS_PER_CONVERSATION);
      }
      expect(problems).toEqual([]);
      expect(appended.length).toBe(CONVERSATIONS * EVENTS_PER_CONVERSATION);
      // the leader died while the writers were busy
      expect(beforeKill).toBeGreaterThan(0);
      expect(beforeKill).toBeLessThan(appended.length / 2);
    } finally {
      await Promise.all(connections.map((nc) => nc.close()));
    }
  }, 180_000);
});
