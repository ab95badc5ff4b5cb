import { describe, expect, it } from 'vitest';
import { draftEvent, type DraftContext } from './draft.js';
import { parseCommit } from './commit.js';
import { EVENT_TYPES, parseEvent, type EventType } from './event.js';
import type { ActionEvent } from './schemas/conversation-events.js';
import { goldenEvents } from './test-support/fixtures.js';

const context: DraftContext = {
  tenant: 'acme-corp',
  conversation: 'conv_01JDA7Q0W9M3T5B8XK2N4P6R8S',
  source: 'agent',
  now: () => new Date('2026-03-02T09:15:04.871Z'),
};

const ENVELOPE = new Set(['v', 'id', 'seq', 'tenant', 'conversation', 'source', 'timestamp', 'parent', 'type']);

describe('draftEvent', () => {
  it("stamps the oldest version that expresses the event: v4 for a stored image, in any content list, and the type's otherwise", () => {
    const stored = { type: 'image' as const, sha256: 'a'.repeat(64), bytes: 10, media_type: 'image/png' };
    const withImage = draftEvent(context, 'message', {
      role: 'user',
      content: [{ type: 'text', text: 'look' }, stored],
    });
    expect(withImage.v).toBe(4);
    expect(
      draftEvent(context, 'message', { role: 'user', content: [{ type: 'image', url: 'https://example.com/a.png' }] })
        .v,
    ).toBe(1);
    const observation = draftEvent(context, 'observation', {
      action_id: 'a1',
      tool_call_id: 't1',
      tool_name: 'x',
      content: [stored],
      is_error: false,
    });
    expect(observation.v).toBe(4);
    expect(parseEvent({ ...withImage, seq: 3 }).v).toBe(4);
    // the same event stamped older is refused at its v, naming the field that needs v4
    expect(() => parseEvent({ ...withImage, seq: 3, v: 3 })).toThrowError(
      /v: a stored image .* exists from protocol version 4 on/,
    );
  });

  it("stamps v5 on an llm_usage naming the fallback that made its call, and the type's v1 on one without", () => {
    const usage = {
      model: 'gpt-4.1',
      purpose: 'step' as const,
      prompt_tokens: 10,
      completion_tokens: 2,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: 12,
      cost_usd: 0,
    };
    const fallback = { index: 0, provider: 'openai-chat', model: 'gpt-4.1', profile: 'backup' };
    const byFallback = draftEvent({ ...context, source: 'system' }, 'llm_usage', { ...usage, fallback });
    expect(byFallback.v).toBe(5);
    expect(draftEvent({ ...context, source: 'system' }, 'llm_usage', usage).v).toBe(1);
    expect(parseEvent({ ...byFallback, seq: 4 })).toMatchObject({ v: 5, fallback });
    expect(() => parseEvent({ ...byFallback, seq: 4, v: 4 })).toThrowError(
      /v: an llm_usage's fallback exists from protocol version 5 on/,
    );
  });

  it('fills the envelope: version, fresh id, tenant, conversation, source, UTC timestamp', () => {
    const draft = draftEvent(context, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] });
    expect(draft).toMatchObject({
      v: 1,
      type: 'message',
      tenant: 'acme-corp',
      conversation: 'conv_01JDA7Q0W9M3T5B8XK2N4P6R8S',
      source: 'agent',
      timestamp: '2026-03-02T09:15:04.871Z',
    });
    expect(draft.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(draft).not.toHaveProperty('seq');
    expect(draft).not.toHaveProperty('parent');
    expect(draftEvent(context, 'pause', {}).id).not.toBe(draft.id);
  });

  it('stamps each event with the oldest protocol version that has its type', () => {
    expect(draftEvent(context, 'message', { role: 'user', content: [] }).v).toBe(1);
    expect(draftEvent(context, 'secret_changed', { name: 'GITHUB_TOKEN', action: 'set' }).v).toBe(2);
  });

  it('lets the body override id, source and parent', () => {
    const draft = draftEvent({ ...context, parent: 'from-context' }, 'pause', {
      id: 'ev-1',
      source: 'user',
      parent: 'ev-0',
    });
    expect(draft).toMatchObject({ id: 'ev-1', source: 'user', parent: 'ev-0' });
    expect(draftEvent({ ...context, parent: 'from-context' }, 'pause', {}).parent).toBe('from-context');
  });

  it('defaults the timestamp to the wall clock, in UTC', () => {
    const { now: _now, ...withoutClock } = context;
    const before = Date.now();
    const draft = draftEvent(withoutClock, 'interrupt', {});
    expect(draft.timestamp).toMatch(/Z$/);
    expect(Date.parse(draft.timestamp)).toBeGreaterThanOrEqual(before);
  });

  it.each(EVENT_TYPES)('a %s draft validates once the log assigns a seq', (type: EventType) => {
    for (const fixture of goldenEvents().filter((golden) => golden.type === type)) {
      const value = fixture.value as Record<string, unknown>;
      const body = Object.fromEntries(Object.entries(value).filter(([key]) => !ENVELOPE.has(key)));
      const draft = draftEvent({ ...context, source: value['source'] as DraftContext['source'] }, type, body as never);
      const event = parseEvent({ ...draft, seq: 7 });
      expect(event).toMatchObject({ ...body, type, seq: 7, tenant: context.tenant });
    }
  });

  it('drafts of one step become a valid commit once placed', () => {
    const shared = {
      response_id: 'resp_1',
      security_risk: 'low',
      thought: [],
      arguments: '{}',
      input: {},
      tool_name: 'terminal',
    } satisfies Partial<ActionEvent>;
    const drafts = [
      draftEvent(context, 'action', { ...shared, tool_call_id: 'call_a' }),
      draftEvent(context, 'action', { ...shared, tool_call_id: 'call_b' }),
    ];
    const commit = parseCommit({
      v: 1,
      commit: 'commit-1',
      tenant: context.tenant,
      conversation: context.conversation,
      first_seq: 12,
      events: drafts.map((draft, index) => ({ ...draft, seq: 12 + index })),
    });
    expect(commit.events.map((event) => event.seq)).toEqual([12, 13]);
  });
});
