import type { ActionEvent, ConversationStatus, Event, EventDraft } from '@flotilla/events';
import type { StoredCommit } from '@flotilla/log';
import { conversationState, foldCommits, initialSnapshot, type ConversationState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import {
  approveCommand,
  CommandRefused,
  interruptCommand,
  messageCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
  type CommandState,
} from './commands.js';
import { ConversationProgress } from './progress.js';
import { conversationFixture, realRunCommits } from './test-support/conversation-fixture.js';

const ref = { tenant: 'acme', conversation: 'replayed' };
const context = { ...ref, now: () => new Date('2026-01-01T00:00:00.000Z') };

/** Every command, decided from `state`: the drafts without their (random) ids, or the refusal's code. */
function decisions(state: CommandState): Record<string, unknown> {
  const decide = (command: () => EventDraft[]): unknown => {
    try {
      return command().map(({ id: _id, ...draft }) => draft);
    } catch (error) {
      if (error instanceof CommandRefused) return `refused: ${error.code}`;
      throw error;
    }
  };
  return {
    message: decide(() => messageCommand(state, context, 'more')),
    messageAndRun: decide(() => messageCommand(state, context, 'more', { run: true })),
    run: decide(() => runCommand(state, context)),
    resume: decide(() => runCommand(state, context, { resume: true })),
    pause: decide(() => pauseCommand(state, context, 'later')),
    interrupt: decide(() => interruptCommand(state, context, 'stop')),
    approve: decide(() => approveCommand(state, context)),
    reject: decide(() => rejectCommand(state, context, 'no')),
  };
}

/**
 * What the commands read, by plain scans of the whole log (the definition before the snapshot
 * held it): the last status set, and the executable actions with no answer and no start.
 */
function scannedState(events: readonly Event[]): CommandState {
  let status: ConversationStatus = 'idle';
  const answered = new Set<string>();
  const started = new Set<string>();
  for (const event of events) {
    if (event.type === 'state_change' && event.status !== undefined) status = event.status;
    else if (event.type === 'observation' || event.type === 'user_rejection') answered.add(event.tool_call_id);
    else if (event.type === 'agent_error' && event.tool_call_id !== undefined) answered.add(event.tool_call_id);
    else if (event.type === 'execution_started') for (const id of event.action_ids) started.add(id);
  }
  const pending = events.filter(
    (event): event is ActionEvent =>
      event.type === 'action' && event.input !== null && !answered.has(event.tool_call_id),
  );
  return {
    status,
    pending_actions: pending.map((action) => ({
      id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      executable: true,
      started_by: started.has(action.id) ? 'someone' : null,
    })),
  };
}

function stored(commits: readonly (readonly Event[])[]): StoredCommit[] {
  return commits.map((events, index) => ({
    streamSeq: 10 + 3 * index,
    id: `commit-${index}`,
    tenant: ref.tenant,
    conversation: ref.conversation,
    firstSeq: events[0]!.seq,
    lastSeq: events.at(-1)!.seq,
    events: events.map((event) => ({ ...event, tenant: ref.tenant, conversation: ref.conversation })),
  }));
}

describe('commands decided from the snapshot and the commits after it', () => {
  it('decide as from the whole log, at every tail of real runs and from every snapshot position before it', async () => {
    await using fixture = await conversationFixture();
    let checked = 0;
    const seen = new Set<string>();
    for (const run of await realRunCommits(fixture)) {
      const commits = stored(run);
      for (let tail = 1; tail <= commits.length; tail += 1) {
        const events = commits.slice(0, tail).flatMap((commit) => commit.events);
        const expected = decisions(scannedState(events));
        const whole: ConversationState = conversationState(events);
        expect(decisions(whole), `whole log at commit ${tail}`).toEqual(expected);
        expect(decisions(ConversationProgress.of(events).state), `in-memory fold at commit ${tail}`).toEqual(expected);
        for (let position = 0; position <= tail; position += 1) {
          const snapshot = foldCommits(initialSnapshot(ref), commits.slice(0, position));
          const current = foldCommits(snapshot, commits.slice(position, tail));
          expect(decisions(current), `snapshot at commit ${position}, tail at commit ${tail}`).toEqual(expected);
          checked += 1;
        }
        seen.add(whole.status);
      }
    }
    // the runs pass through every state a command treats differently
    expect([...seen].sort()).toEqual(['finished', 'running', 'waiting_for_confirmation']);
    expect(checked).toBeGreaterThan(200);
  });
});
