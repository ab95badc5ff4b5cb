import { AckPolicy, DeliverPolicy, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

export type DurableConsumerSpec = {
  readonly stream: string;
  /** The service group: every instance of a service shares this durable consumer. */
  readonly name: string;
  /** The subjects it is delivered (one, or several that do not overlap). */
  readonly filterSubjects: readonly string[];
  readonly ackWaitMs: number;
  /** Unacknowledged commits in flight across the whole group (size it to the group's concurrency). */
  readonly maxAckPending: number;
};

const CONSUMER_NOT_FOUND = 10014;

/**
 * Creates the group's durable pull consumer, or updates the settings that may change (its
 * filters among them: a group delivered fewer kinds than an older version's). Every commit on its
 * subjects reaches the group (deliver all, explicit acks, unlimited redeliveries).
 */
export async function ensureDurableConsumer(jsm: JetStreamManager, spec: DurableConsumerSpec): Promise<void> {
  const existing = await jsm.consumers.info(spec.stream, spec.name).catch((error: unknown) => {
    if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) return undefined;
    throw error;
  });
  if (!existing) {
    await jsm.consumers.add(spec.stream, {
      durable_name: spec.name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ...filters(spec.filterSubjects),
      ack_wait: nanos(spec.ackWaitMs),
      max_ack_pending: spec.maxAckPending,
      max_deliver: -1,
      // the body comes with the wake-up: a service holding the conversation in its cache extends
      // it from the delivered commit instead of reading it back from the log
      headers_only: false,
    });
    return;
  }
  const current = existing.config.filter_subjects ?? (existing.config.filter_subject ? [existing.config.filter_subject] : []);
  const sameFilters = current.length === spec.filterSubjects.length && spec.filterSubjects.every((subject) => current.includes(subject));
  if (!sameFilters || existing.config.ack_wait !== nanos(spec.ackWaitMs) || existing.config.max_ack_pending !== spec.maxAckPending || existing.config.headers_only === true) {
    await jsm.consumers.update(spec.stream, spec.name, { ack_wait: nanos(spec.ackWaitMs), max_ack_pending: spec.maxAckPending, headers_only: false, ...filters(spec.filterSubjects) });
  }
}

/** One filter as `filter_subject` (what nats-server answers for a single one), several as `filter_subjects`. */
function filters(subjects: readonly string[]): { filter_subject?: string; filter_subjects?: string[] } {
  return subjects.length === 1 ? { filter_subject: subjects[0]!, filter_subjects: [] } : { filter_subject: '', filter_subjects: [...subjects] };
}
