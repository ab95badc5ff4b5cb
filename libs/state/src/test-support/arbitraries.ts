import { ConversationStatus, draftEvent, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import fc from 'fast-check';

/** What happens in a conversation, independent of its ref, so one sample can be replayed anywhere. */
export type Happening =
  | { readonly kind: 'user_message'; readonly text: string }
  | { readonly kind: 'environment_message' }
  | { readonly kind: 'agent_message'; readonly text: string }
  | {
      readonly kind: 'tool_call';
      readonly outcome: 'observation' | 'failed_observation' | 'agent_error' | 'rejection' | 'pending' | 'unparseable';
    }
  /** A runner starts the actions still waiting (or one the log does not have). */
  | { readonly kind: 'execution_started' }
  /** An answer for the tool call id the next happening would use (a tool call: logged before it; else never matched). */
  | { readonly kind: 'early_answer' }
  | { readonly kind: 'finish'; readonly message: string }
  | { readonly kind: 'free_agent_error' }
  | {
      readonly kind: 'state_change';
      readonly status?: ConversationStatus;
      readonly title?: string;
      readonly tags?: string[];
      readonly settings_ref?: string;
    }
  | { readonly kind: 'conversation_error'; readonly code: string; readonly detail: string }
  | {
      readonly kind: 'llm_usage';
      readonly prompt: number;
      readonly completion: number;
      readonly cacheRead: number;
      readonly cacheWrite: number;
      readonly reasoning: number;
      readonly cost: number;
    }
  | { readonly kind: 'condensation' }
  | { readonly kind: 'condensation_request' }
  | { readonly kind: 'pause' };

export type TimedHappening = { readonly happening: Happening; readonly at: Date };

const tokens = fc.nat({ max: 2_000_000 });
const statusArbitrary = fc.constantFrom(...ConversationStatus.options);

const stateChange = fc
  .record(
    {
      status: statusArbitrary,
      title: fc.string({ maxLength: 40 }),
      tags: fc.array(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 4 }),
      settings_ref: fc.string({ minLength: 1, maxLength: 24 }),
    },
    { requiredKeys: [], noNullPrototype: true },
  )
  .filter((change) => Object.keys(change).length > 0)
  .map((change): Happening => ({ kind: 'state_change', ...change }));

export const happening: fc.Arbitrary<Happening> = fc.oneof(
  fc.record({ kind: fc.constant('user_message' as const), text: fc.string({ maxLength: 20 }) }),
  fc.constant<Happening>({ kind: 'environment_message' }),
  fc.record({ kind: fc.constant('agent_message' as const), text: fc.string({ maxLength: 20 }) }),
  {
    arbitrary: fc.record({
      kind: fc.constant('tool_call' as const),
      outcome: fc.constantFrom(
        'observation',
        'failed_observation',
        'agent_error',
        'rejection',
        'pending',
        'unparseable',
      ),
    }),
    weight: 3,
  },
  fc.constant<Happening>({ kind: 'execution_started' }),
  fc.constant<Happening>({ kind: 'early_answer' }),
  fc.record({ kind: fc.constant('finish' as const), message: fc.string({ maxLength: 20 }) }),
  fc.constant<Happening>({ kind: 'free_agent_error' }),
  { arbitrary: stateChange, weight: 2 },
  fc.record({
    kind: fc.constant('conversation_error' as const),
    code: fc.constantFrom('max_iterations', 'budget', 'llm_failed'),
    detail: fc.string({ maxLength: 20 }),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('llm_usage' as const),
      prompt: tokens,
      completion: tokens,
      cacheRead: tokens,
      cacheWrite: tokens,
      reasoning: tokens,
      cost: fc.double({ min: 0, max: 5, noNaN: true, noDefaultInfinity: true }).map((cost) => (cost === 0 ? 0 : cost)),
    }),
    weight: 2,
  },
  fc.constant<Happening>({ kind: 'condensation' }),
  fc.constant<Happening>({ kind: 'condensation_request' }),
  fc.constant<Happening>({ kind: 'pause' }),
);

/** Event timestamps are whatever writers' clocks said: not necessarily monotonic. */
const at = fc.date({
  min: new Date('2025-01-01T00:00:00Z'),
  max: new Date('2027-12-31T00:00:00Z'),
  noInvalidDate: true,
});

/** A random conversation: happenings with timestamps, and the sizes (1-5 events) of the commits to split them into. */
export const conversationScript = fc.record({
  happenings: fc.array(fc.record({ happening, at }), { minLength: 1, maxLength: 40 }),
  commitSizes: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 20 }),
});
export type ConversationScript = {
  readonly happenings: readonly TimedHappening[];
  readonly commitSizes: readonly number[];
};

/** Turns happenings into event drafts for `ref` (a tool call becomes an action and its outcome). */
export function draftsFor(ref: ConversationRef, happenings: readonly TimedHappening[]): EventDraft[] {
  const drafts: EventDraft[] = [];
  const waiting: string[] = [];
  happenings.forEach(({ happening: item, at: when }, index) => {
    const context = (source: 'user' | 'agent' | 'environment' | 'system') => ({ ...ref, source, now: () => when });
    switch (item.kind) {
      case 'user_message':
        drafts.push(
          draftEvent(context('user'), 'message', { role: 'user', content: [{ type: 'text', text: item.text }] }),
        );
        return;
      case 'environment_message':
        drafts.push(
          draftEvent(context('environment'), 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'continue' }],
          }),
        );
        return;
      case 'agent_message':
        drafts.push(
          draftEvent(context('agent'), 'message', { role: 'assistant', content: [{ type: 'text', text: item.text }] }),
        );
        return;
      case 'tool_call': {
        const call = { tool_call_id: `call_${index}`, tool_name: 'terminal' };
        const action = draftEvent(context('agent'), 'action', {
          ...call,
          arguments: '{}',
          input: item.outcome === 'unparseable' ? null : {},
          thought: [],
          response_id: `resp_${index}`,
          security_risk: 'low',
        });
        drafts.push(action);
        if (item.outcome === 'observation' || item.outcome === 'failed_observation') {
          drafts.push(
            draftEvent(context('environment'), 'observation', {
              ...call,
              action_id: action.id,
              content: [],
              is_error: item.outcome === 'failed_observation',
            }),
          );
        } else if (item.outcome === 'agent_error' || item.outcome === 'unparseable') {
          drafts.push(
            draftEvent(context('environment'), 'agent_error', { ...call, action_id: action.id, error: 'failed' }),
          );
        } else if (item.outcome === 'rejection') {
          drafts.push(
            draftEvent(context('user'), 'user_rejection', {
              ...call,
              action_id: action.id,
              reason: 'no',
              rejection_source: 'user',
            }),
          );
        } else {
          waiting.push(action.id);
        }
        return;
      }
      case 'execution_started': {
        // with nothing waiting, a start naming an action that is not in the log (the fold ignores it)
        const started = waiting.length > 0 ? waiting.splice(0) : ['not-in-the-log'];
        drafts.push(
          draftEvent(context('system'), 'execution_started', { action_ids: started, runner: `runner-${index % 3}` }),
        );
        return;
      }
      case 'early_answer':
        drafts.push(
          draftEvent(context('environment'), 'observation', {
            tool_call_id: `call_${index + 1}`,
            tool_name: 'terminal',
            action_id: 'not-logged-yet',
            content: [],
            is_error: false,
          }),
        );
        return;
      case 'finish':
        drafts.push(
          draftEvent(context('agent'), 'action', {
            tool_call_id: `call_${index}`,
            tool_name: 'finish',
            arguments: JSON.stringify({ message: item.message }),
            input: { message: item.message },
            thought: [],
            response_id: `resp_${index}`,
            security_risk: 'low',
          }),
        );
        return;
      case 'free_agent_error':
        drafts.push(draftEvent(context('agent'), 'agent_error', { error: 'could not parse the response' }));
        return;
      case 'state_change': {
        const { kind: _kind, ...change } = item;
        drafts.push(draftEvent(context('system'), 'state_change', change));
        return;
      }
      case 'conversation_error':
        drafts.push(draftEvent(context('system'), 'conversation_error', { code: item.code, detail: item.detail }));
        return;
      case 'llm_usage':
        drafts.push(
          draftEvent(context('system'), 'llm_usage', {
            model: 'test-model',
            purpose: 'step',
            prompt_tokens: item.prompt,
            completion_tokens: item.completion,
            cache_read_tokens: item.cacheRead,
            cache_write_tokens: item.cacheWrite,
            reasoning_tokens: item.reasoning,
            latency_ms: 5,
            cost_usd: item.cost,
          }),
        );
        return;
      case 'condensation':
        drafts.push(draftEvent(context('system'), 'condensation', { forgotten_event_ids: [] }));
        return;
      case 'condensation_request':
        drafts.push(draftEvent(context('system'), 'condensation_request', {}));
        return;
      case 'pause':
        drafts.push(draftEvent(context('user'), 'pause', {}));
        return;
    }
  });
  return drafts;
}

/** Splits drafts into commits, cycling through `sizes`. */
export function splitIntoCommits<T>(items: readonly T[], sizes: readonly number[]): T[][] {
  const groups: T[][] = [];
  for (let start = 0, index = 0; start < items.length; index += 1) {
    const size = sizes[index % sizes.length] ?? 1;
    groups.push(items.slice(start, start + size));
    start += size;
  }
  return groups;
}
