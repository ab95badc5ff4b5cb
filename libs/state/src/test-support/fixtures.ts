import { EventLog, type ConversationRef } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { CorruptSnapshotReport, SnapshotStoreOptions } from '../snapshot-store.js';
import { SnapshotStore } from '../snapshot-store.js';

export type StateFixture = AsyncDisposable & {
  readonly server: NatsTestServer;
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly store: SnapshotStore;
  /** Every corrupt value the store reported. */
  readonly corrupt: CorruptSnapshotReport[];
  /** Another store on the same bucket (as a second process would have). */
  openStore(options?: SnapshotStoreOptions): Promise<SnapshotStore>;
};

/** A fresh nats-server (or NATS_URL), an EventLog on a unique stream and a SnapshotStore on a unique bucket. */
export async function stateFixture(options: SnapshotStoreOptions = {}): Promise<StateFixture> {
  const server = await startNats();
  const nc = await connect({
    servers: server.url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 50,
    pingInterval: 1_000,
  });
  const name = uniqueName('ST');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const bucket = uniqueName('snapshots');
  const corrupt: CorruptSnapshotReport[] = [];
  const openStore = (extra: SnapshotStoreOptions = {}): Promise<SnapshotStore> =>
    SnapshotStore.open(nc, { bucket, onCorrupt: (report) => corrupt.push(report), ...options, ...extra });
  const store = await openStore();
  return {
    server,
    nc,
    log,
    store,
    corrupt,
    openStore,
    async [Symbol.asyncDispose]() {
      await store.kv.destroy().catch(() => undefined);
      await log.jsm.streams.delete(log.streamName).catch(() => undefined);
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

export function newRef(): ConversationRef {
  return { tenant: 'acme', conversation: uniqueName('c') };
}
