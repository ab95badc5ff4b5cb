import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Payload } from '@nats-io/transport-node';
import { answersUnder, connectionInboxPrefix } from './connection-options.js';

/**
 * A request to a service that answers requests (a tool runner deleting a workspace, the projector
 * purging a log), its answer coming back under the asker's answers branch
 * (`_INBOX.<asker>.answers.<id>`), which those services' credentials may publish to.
 *
 * Not nats-server's response permissions (`allow_responses`), which would need no branch: for a
 * user that has them, nats-server 2.9 records the reply subject of every message it delivers to
 * that user's connections (each JetStream delivery: its ack subject, already allowed or not) for
 * two minutes, and once a connection holds more than 4,096 walks all of them at every delivery, in
 * the stream's one delivery loop. A tool runner working through a backlog of 22,000 commits held
 * nats-server at a full core and every consumer of the stream at a few hundred commits a second
 * (docs/benchmarks.md, backlog-drain). Later servers record only replies not otherwise allowed.
 */
export function requestAnswer(
  nc: NatsConnection,
  subject: string,
  payload: Payload | undefined,
  options: { readonly timeout: number; readonly headers?: MsgHdrs },
): Promise<Msg> {
  const reply = createInbox(answersUnder(connectionInboxPrefix(nc) ?? '_INBOX'));
  return nc.request(subject, payload, { ...options, noMux: true, reply });
}
