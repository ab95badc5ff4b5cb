import { draftEvent, type ActionEvent, type Event } from '@flotilla/events';
import { ACME_KEY, awaitingConfirmation, startGatewayHarness, writeLongConversation } from '@flotilla/gateway/testing';
import type { ConversationRef } from '@flotilla/log';
import { SnapshotStore } from '@flotilla/state';
import { median, ms, percentile, ratio, table } from './stats.js';

type Subject = {
  readonly size: number;
  readonly talk: ConversationRef;
  readonly confirm: ConversationRef;
  /** The confirm conversation's action awaiting confirmation (the next round answers it, as a tool runner would). */
  waiting: ActionEvent;
  readonly message: number[];
  readonly approve: number[];
  readonly wholeRead: number[];
};

/**
 * Gateway command latency against the conversation's length: POST …/messages, and POST
 * …/confirmation approve on a conversation waiting for confirmation, through a real gateway (the
 * in-process harness: Fastify on loopback, real nats-server, the client's HTTP), on conversations
 * of 10, 10,000 and 100,000 events written straight to the log in large commits. The snapshots are
 * caught up first, as the projector keeps them; before each approve the tool runner's answer to
 * the last approved action and a new action awaiting confirmation are appended straight to the
 * log, so the approve reads one commit past its snapshot. Sizes take turns round by round, so a
 * disturbance (other processes on the machine) hits them alike. For scale, the table also shows
 * what reading the whole log costs (what every command did before).
 */
export async function benchCommandLatency(
  sizes: readonly number[] = [10, 10_000, 100_000],
  rounds = 60,
  warmup = 5,
): Promise<string> {
  await using harness = await startGatewayHarness();
  const snapshots = await SnapshotStore.open(harness.nc);
  const subjects: Subject[] = [];
  for (const size of sizes) {
    const talk = { tenant: 'acme', conversation: `talk-${size}` };
    const confirm = { tenant: 'acme', conversation: `confirm-${size}` };
    await writeLongConversation(harness.log, talk, size);
    const written = await writeLongConversation(harness.log, confirm, size, { waiting: true });
    await snapshots.catchUp(talk, harness.log);
    await snapshots.catchUp(confirm, harness.log);
    const { events } = await harness.log.readEvents(confirm, { afterSeq: written.tail.lastSeq - 2 });
    subjects.push({ size, talk, confirm, waiting: actionOf(events), message: [], approve: [], wholeRead: [] });
  }
  const post = async (path: string, body: unknown): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${harness.url}/v1/conversations/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as { appended?: boolean };
    const elapsed = performance.now() - started;
    if (response.status !== 202 || answer.appended !== true)
      throw new Error(`${path} answered ${response.status} ${JSON.stringify(answer)}`);
    return elapsed;
  };
  for (let round = 0; round < warmup + rounds; round += 1) {
    for (const subject of subjects) {
      const message = await post(`${subject.talk.conversation}/messages`, { text: `round ${round}` });
      // the runner answers the action approved last round; the next step asks for confirmation again
      const ref = subject.confirm;
      const answered = draftEvent({ ...ref, source: 'environment', parent: subject.waiting.id }, 'observation', {
        action_id: subject.waiting.id,
        tool_call_id: subject.waiting.tool_call_id,
        tool_name: subject.waiting.tool_name,
        content: [{ type: 'text', text: 'ok' }],
        is_error: false,
      });
      const current = await harness.log.tail(ref);
      const asked = await harness.log.append(
        ref,
        [...(round === 0 ? [] : [answered]), ...awaitingConfirmation(ref, `ask_${round}`)],
        { expected: current },
      );
      subject.waiting = actionOf(asked.events);
      const approve = await post(`${ref.conversation}/confirmation`, { decision: 'approve' });
      if (round >= warmup) {
        subject.message.push(message);
        subject.approve.push(approve);
      }
    }
  }
  for (const subject of subjects) {
    for (let repeat = 0; repeat < 3; repeat += 1) {
      const started = performance.now();
      await harness.log.readEvents(subject.talk);
      subject.wholeRead.push(performance.now() - started);
    }
  }
  const rows = [['events', 'message p50', 'message p90', 'approve p50', 'approve p90', 'whole-log read (before)']];
  for (const subject of subjects) {
    rows.push([
      subject.size.toLocaleString('en'),
      ms(median(subject.message)),
      ms(percentile(subject.message, 90)),
      ms(median(subject.approve)),
      ms(percentile(subject.approve, 90)),
      ms(median(subject.wholeRead)),
    ]);
  }
  const smallest = subjects[0]!;
  const largest = subjects.at(-1)!;
  const ratios =
    `message p50 ${largest.size.toLocaleString('en')} / ${smallest.size.toLocaleString('en')} events: ${ratio(median(largest.message), median(smallest.message))}\n` +
    `approve p50 ${largest.size.toLocaleString('en')} / ${smallest.size.toLocaleString('en')} events: ${ratio(median(largest.approve), median(smallest.approve))}`;
  return `Gateway command latency by history length (${rounds} rounds; goal: ratio <= 1.5)\n${table(rows)}\n${ratios}`;
}

function actionOf(events: readonly Event[]): ActionEvent {
  const action = events.find((event): event is ActionEvent => event.type === 'action');
  if (!action) throw new Error('no action awaits confirmation');
  return action;
}
