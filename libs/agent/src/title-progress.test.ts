import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { TITLE_FAILED, TitleProgress, titleWork } from './title-progress.js';

const context = { tenant: 'acme', conversation: 'titled' };

function conversation() {
  let seq = 0;
  const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
  return {
    created: (title?: string) =>
      event(
        draftEvent({ ...context, source: 'system' }, 'state_change', {
          status: 'idle',
          reason: 'conversation created',
          ...(title === undefined ? {} : { title }),
        }),
      ),
    userMessage: (...content: ({ type: 'text'; text: string } | { type: 'image'; url: string })[]) =>
      event(draftEvent({ ...context, source: 'user' }, 'message', { role: 'user', content })),
    nudge: (text: string) =>
      event(
        draftEvent({ ...context, source: 'environment' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text }],
        }),
      ),
    agentMessage: (text: string) =>
      event(
        draftEvent({ ...context, source: 'agent' }, 'message', {
          role: 'assistant',
          content: [{ type: 'text', text }],
        }),
      ),
    running: () => event(draftEvent({ ...context, source: 'system' }, 'state_change', { status: 'running' })),
    titled: (title: string, source: 'user' | 'system' = 'user') =>
      event(draftEvent({ ...context, source }, 'state_change', { title })),
    failed: (code = TITLE_FAILED) =>
      event(draftEvent({ ...context, source: 'system' }, 'conversation_error', { code, detail: 'down' })),
  };
}

/** The decision at every prefix of `events`, whole and folded commit by commit at every cut. */
function decisionsAgree(events: readonly Event[]): void {
  for (let end = 0; end <= events.length; end += 1) {
    const whole = titleWork(events.slice(0, end));
    for (let cut = 0; cut <= end; cut += 1) {
      const folded = new TitleProgress();
      folded.append(events.slice(0, cut));
      folded.append(events.slice(cut, end));
      expect(folded.work(), `prefix ${end}, cut at ${cut}`).toEqual(whole);
    }
  }
}

describe('titleWork: is a title owed?', () => {
  it('owes a title once a user has written text, naming the first such message', () => {
    const c = conversation();
    const created = c.created();
    expect(titleWork([created]).kind).toBe('no_message');
    const first = c.userMessage({ type: 'text', text: 'Fix the flaky login test' });
    const events = [
      created,
      first,
      c.running(),
      c.agentMessage('On it.'),
      c.userMessage({ type: 'text', text: 'And the docs' }),
    ];
    expect(titleWork(events)).toEqual({ kind: 'owed', message: first });
    decisionsAgree(events);
  });

  it('counts only a user’s text: not an image alone, not a blank message, not an environment nudge, not the agent', () => {
    const c = conversation();
    const events = [
      c.created(),
      c.userMessage({ type: 'image', url: 'https://example.com/a.png' }),
      c.userMessage({ type: 'text', text: '   ' }),
      c.nudge('Call tools properly.'),
      c.agentMessage('Hello'),
    ];
    expect(titleWork(events).kind).toBe('no_message');
    const described = c.userMessage(
      { type: 'image', url: 'https://example.com/b.png' },
      { type: 'text', text: 'What is in this picture?' },
    );
    expect(titleWork([...events, described])).toEqual({ kind: 'owed', message: described });
  });

  it('owes nothing, ever again, once anyone set a title (at creation, a PATCH, a generation) or an attempt failed for good', () => {
    const c = conversation();
    const message = c.userMessage({ type: 'text', text: 'Refactor the parser' });
    expect(titleWork([c.created('Given at creation'), message]).kind).toBe('settled');
    expect(titleWork([c.created(), message, c.titled('Set by a PATCH')]).kind).toBe('settled');
    expect(titleWork([c.created(), message, c.titled('Refactor the parser', 'system')]).kind).toBe('settled');
    expect(titleWork([c.created(), c.titled('')]).kind).toBe('settled'); // an empty title is a title someone chose
    const failed = [c.created(), message, c.failed(), c.userMessage({ type: 'text', text: 'Try again' })];
    expect(titleWork(failed).kind).toBe('settled');
    decisionsAgree(failed);
    // other conversation errors are not title attempts
    expect(titleWork([c.created(), message, c.failed('llm_timeout')]).kind).toBe('owed');
    // a title set before the first message: nothing is owed when it comes
    decisionsAgree([c.created(), c.titled('Early'), message]);
  });
});
