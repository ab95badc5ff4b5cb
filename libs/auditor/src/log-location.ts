import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Where the events live. An `EventLog` is one (it has these four fields), but the auditor needs
 * no more: it never opens the log for writing, so it never creates or updates a stream.
 */
export type LogLocation = {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly streamName: string;
  readonly subjectPrefix: string;
};
