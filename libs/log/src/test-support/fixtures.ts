import { draftEvent, type EventDraft } from '@flotilla/events';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { EventLog } from '../event-log.js';
import type { EventLogOptions } from '../event-log-options.js';
import type { ConversationRef } from '../conversation-ref.js';

export type LogFixture = AsyncDisposable & { server: NatsTestServer; nc: NatsConnection; log: EventLog };

/** A fresh nats-server (or NATS_URL), a connection that reconnects forever, and an EventLog on a unique stream. */
export async function logFixture(options: EventLogOptions = {}): Promise<LogFixture> {
  const server = await startNats();
  const nc = await connect({
    servers: server.url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 50,
    pingInterval: 1_000,
  });
  const name = uniqueName('EV');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}`, ...options });
  return {
    server,
    nc,
    log,
    async [Symbol.asyncDispose]() {
      await log.jsm.streams.delete(log.streamName).catch(() => undefined);
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}

export function newRef(): ConversationRef {
  return { tenant: 'acme', conversation: uniqueName('c') };
}

export function userMessage(ref: ConversationRef, text: string): EventDraft {
  return draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] });
}
