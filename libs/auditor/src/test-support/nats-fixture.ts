import type { EventDraft } from '@flotilla/events';
import { EventLog, type ConversationRef, type StoredCommit, type Tail, EMPTY_TAIL } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';

export type AuditFixture = AsyncDisposable & {
  readonly server: NatsTestServer;
  readonly nc: NatsConnection;
  /** A fresh EventLog on its own stream and subject prefix. */
  openLog(): Promise<EventLog>;
};

/** A nats-server (or NATS_URL) for the suite; logs opened on it are deleted with it. */
export async function auditFixture(): Promise<AuditFixture> {
  const server = await startNats();
  const nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
  const logs: EventLog[] = [];
  return {
    server,
    nc,
    async openLog() {
      const name = uniqueName('AUD');
      const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
      logs.push(log);
      return log;
    },
    async [Symbol.asyncDispose]() {
      for (const log of logs) await log.jsm.streams.delete(log.streamName).catch(() => undefined);
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

/** Appends commits one after another, each expecting the tail the previous one left. */
export async function appendAll(
  log: EventLog,
  ref: ConversationRef,
  commits: readonly (readonly EventDraft[])[],
  tail: Tail = EMPTY_TAIL,
): Promise<StoredCommit[]> {
  const stored: StoredCommit[] = [];
  let expected = tail;
  for (const drafts of commits) {
    const commit = await log.append(ref, drafts, { expected });
    stored.push(commit);
    expected = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
  }
  return stored;
}
