import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';
import { findTextToolCall, isLlmError, type GenerateResult, type LanguageModel, type StreamDelta } from '@flotilla/llm';
import { llmUsageDraft, shouldCondense } from '@flotilla/condenser';
import type { ChatRenderer, View } from '@flotilla/view';
import type { AgentConfig } from './agent-config.js';
import { needsConfirmation } from './confirmation.js';
import { invalidRepliesInRow } from './invalid-replies.js';
import { runState, type RunState } from './run-state.js';
import { assessActions, confirmationReason } from './security-analyzer.js';
import { skillActivationDraft } from './skill-activation.js';
import { SkillsFold } from './skills-fold.js';
import { detectStuck } from './stuck-detector.js';
import { STEP_STREAMS, offeredTools, stepRequest } from './step-request.js';
import { buildSystemPrompt } from './system-prompt.js';
import type { ToolCatalog } from './tool-catalog.js';
import { toolCallEvents, toReasoning } from './tool-call-events.js';
import { estimateTokens, tokensOf } from './token-estimate.js';

export type StepInput = {
  readonly agent: AgentConfig;
  readonly llm: LanguageModel;
  readonly tools: ToolCatalog;
  /** The conversation's whole log up to the tail the caller will append after. */
  readonly events: readonly Event[];
  /**
   * The view of `events`, when the caller keeps one up to date (a `ViewBuilder` extended as
   * events arrive); built from `events` otherwise. Not used on the first step (the system prompt
   * joins the history then).
   */
  readonly view?: () => View;
  /**
   * Renders the view to chat messages, when the caller keeps a renderer per conversation: only
   * what changed since its last step is rendered. Made with `messageCharacters` as its measure,
   * it also keeps the token estimate; without a measure the step measures the messages itself.
   */
  readonly chat?: ChatRenderer;
  /** `runState(events)`, when the caller keeps one up to date (a `RunStateFold`); folded from `events` otherwise. */
  readonly runState?: () => RunState;
  /** `SkillsFold.of(events)`, when the caller keeps one up to date; folded from `events` otherwise. */
  readonly skills?: () => SkillsFold;
  readonly conversation: { readonly tenant: string; readonly conversation: string };
  readonly signal?: AbortSignal;
  readonly onDelta?: (delta: StreamDelta) => void;
  readonly now?: () => Date;
};

export const StepOutcome = {
  /** Actions were decided; a tool runner owes their results. */
  Actions: 'actions',
  /** Actions await the user's confirmation. */
  WaitingForConfirmation: 'waiting_for_confirmation',
  Finished: 'finished',
  /** Nothing to run yet: the model gets another turn (e.g. after a nudge). */
  Continue: 'continue',
  CondensationRequested: 'condensation_requested',
  Stuck: 'stuck',
  Error: 'error',
} as const;
export type StepOutcome = (typeof StepOutcome)[keyof typeof StepOutcome];

export type StepResult = { readonly drafts: readonly EventDraft[]; readonly outcome: StepOutcome };

const EMPTY_REPLY_NUDGE =
  'Your last reply was empty. Continue with the task: call a tool, or reply with your final answer if you are done.';
const CONTENT_FILTER_NUDGE =
  "Your last reply was blocked by the model provider's content filter. Rephrase your reply and continue with the task.";

/**
 * One agent step: reads the conversation's log and decides the next events. Stateless: the
 * same log and the same model reply give the same decision. It never runs tools; it returns
 * the events for ONE commit.
 */
export async function step(input: StepInput): Promise<StepResult> {
  const { agent, events } = input;
  const now = input.now ?? (() => new Date());
  const context: DraftContext = { ...input.conversation, source: 'agent', now };
  const system: DraftContext = { ...context, source: 'system' };
  const state = input.runState?.() ?? runState(events);

  if (state.iterations >= agent.limits.maxIterationsPerRun) {
    return stop(
      system,
      'max_iterations',
      `The run reached its limit of ${agent.limits.maxIterationsPerRun} steps.`,
      'error',
    );
  }
  const budget = agent.limits.maxBudgetPerRunUsd;
  if (budget !== undefined && state.spentUsd >= budget) {
    return stop(
      system,
      'max_budget',
      `The run spent $${state.spentUsd.toFixed(4)}, reaching its budget of $${budget}.`,
      'error',
    );
  }
  if (agent.stuckDetection.enabled) {
    const stuck = detectStuck(events, agent.stuckDetection, state.runStart);
    if (stuck) return stop(system, 'stuck', `The agent appears stuck (${stuck.replaceAll('_', ' ')}).`, 'stuck');
  }

  const drafts: EventDraft[] = [];
  let history = events;
  const skills = agent.skills.enabled ? (input.skills?.() ?? SkillsFold.of(events)) : undefined;
  if (!state.hasSystemPrompt) {
    const prompt = buildSystemPrompt(agent, now(), skills?.context);
    const systemPrompt = draftEvent(context, 'system_prompt', {
      static_prompt: prompt.staticPrompt,
      ...(prompt.dynamicPrompt === undefined ? {} : { dynamic_prompt: prompt.dynamicPrompt }),
      tools: [...offeredTools(input.tools).specs],
    });
    drafts.push(systemPrompt);
    history = [...events, { ...systemPrompt, seq: (events.at(-1)?.seq ?? 0) + 1 } as Event];
  }
  // knowledge skills the user's new messages trigger join their turn, recorded in this step's commit
  const activation = skills ? skillActivationDraft(events, skills, context) : undefined;
  if (activation) {
    drafts.push(activation);
    history = [...history, { ...activation, seq: (history.at(-1)?.seq ?? 0) + 1 } as Event];
  }
  const { request, view, measured } = stepRequest({
    history,
    tools: input.tools,
    ...(history === events && input.view ? { view: input.view } : {}),
    ...(input.chat ? { chat: input.chat } : {}),
  });
  const reasons = shouldCondense(view, agent.condenser, {
    ...(input.llm.info.maxInputTokens === undefined ? {} : { maxInputTokens: input.llm.info.maxInputTokens }),
    countTokens: estimateTokens,
    totalTokens:
      measured === undefined ? estimateTokens(request.messages, request.tools) : tokensOf(measured, request.tools),
  });
  if (reasons) {
    drafts.push(
      draftEvent(system, 'condensation_request', { reason: `the view is too large (${reasons.join(', ')})` }),
    );
    return { drafts, outcome: StepOutcome.CondensationRequested };
  }

  const turn: Turn = {
    agent,
    tools: input.tools,
    context,
    system,
    usedIds: state.toolCallIds,
    events,
    runStart: state.runStart,
    nativeToolCalling: input.llm.info.nativeToolCalling,
  };
  let result: GenerateResult;
  try {
    result = await input.llm.generate(request, {
      stream: STEP_STREAMS,
      ...(input.signal ? { signal: input.signal } : {}),
      ...(input.onDelta ? { onDelta: input.onDelta } : {}),
    });
  } catch (error) {
    const failure = llmFailure(error, turn);
    return { drafts: [...drafts, ...failure.drafts], outcome: failure.outcome };
  }
  // the llm_usage keeps the provider's id; the reply's events carry one no earlier response of the conversation carries
  const reply = replyEvents({ ...result, responseId: freshResponseId(result.responseId, state.responseIds) }, turn);
  return { drafts: [...drafts, llmUsageDraft(result, system, 'step'), ...reply.drafts], outcome: reply.outcome };
}

/**
 * The id a reply's actions and message carry: the provider's, unless an earlier response of the
 * conversation carries it already (a server that returns a constant or recycled id, two servers
 * after a model switch), then that id with a suffix no response carries. The view groups a
 * response's parallel calls by it, so two steps sharing one would be shown as one response.
 */
export function freshResponseId(id: string, used: ReadonlySet<string>): string {
  if (!used.has(id)) return id;
  let fresh = `${id}_${used.size + 1}`;
  while (used.has(fresh)) fresh = `${fresh}_`;
  return fresh;
}

/** What the reply handling reads besides the reply: the agent, its tools, and the log it was decided on. */
type Turn = {
  readonly agent: AgentConfig;
  readonly tools: ToolCatalog;
  readonly context: DraftContext;
  readonly system: DraftContext;
  readonly usedIds: ReadonlySet<string>;
  readonly events: readonly Event[];
  readonly runStart: number;
  /** The model makes tool calls through its provider's interface (not as text it writes). */
  readonly nativeToolCalling: boolean;
};

/**
 * The events of one model reply. Tool calls become actions (an invalid one is answered by an
 * agent_error at once); a reply the step cannot act on (every call invalid, calls written as
 * text, empty) is answered with a correction the model reads, and ends the run once too many come
 * in a row (`correction`); any other text is the final answer.
 */
function replyEvents(result: GenerateResult, turn: Turn): StepResult {
  const { agent, tools, context, system } = turn;
  if (result.toolCalls.length > 0) {
    const called = toolCallEvents(result, tools, context, turn.usedIds);
    if (!called.some((draft) => draft.type === 'action' && draft.input !== null)) {
      const error = called.find((draft) => draft.type === 'agent_error');
      return correction(
        turn,
        called,
        StepOutcome.Actions,
        `every tool call was invalid: ${error?.type === 'agent_error' ? error.error : 'no usable call'}`,
      );
    }
    // each action's security_risk: the highest of the configured analyzers' ratings (the model's, the rules')
    const { drafts: actions, assessments } = assessActions(called, agent.security, tools);
    if (!needsConfirmation(actions, agent.confirmation, tools))
      return { drafts: actions, outcome: StepOutcome.Actions };
    actions.push(
      draftEvent(system, 'state_change', {
        status: 'waiting_for_confirmation',
        reason: confirmationReason(actions, assessments, agent.confirmation, tools),
      }),
    );
    return { drafts: actions, outcome: StepOutcome.WaitingForConfirmation };
  }
  const text = result.content.map((part) => part.text).join('');
  if (text.trim() === '') {
    return correction(
      turn,
      [environmentMessage(context, EMPTY_REPLY_NUDGE)],
      StepOutcome.Continue,
      'the reply was empty',
    );
  }
  const message = draftEvent(context, 'message', {
    role: 'assistant',
    content: result.content.map((part) => ({ type: 'text', text: part.text })),
    response_id: result.responseId,
    ...(result.reasoning ? { reasoning: toReasoning(result.reasoning) } : {}),
  });
  // a native-tools model that writes a call as text: never run it (it may be prose or an example), never take it for the answer
  // (a prompt-tools model's calls are text by design: the model layer has parsed them into toolCalls already)
  const written =
    turn.nativeToolCalling && tools.specs().length > 0
      ? findTextToolCall(
          text,
          tools.specs().map((spec) => spec.name),
        )
      : undefined;
  if (written) {
    const nudge = draftEvent({ ...context, source: 'environment' }, 'agent_error', {
      error: textToolCallNudge(written.name),
    });
    return correction(
      turn,
      [message, nudge],
      StepOutcome.Continue,
      `it wrote a call to "${written.name}" as text instead of calling the tool`,
    );
  }
  // with Stop hooks the run stays open: the tool runner runs them first, and a finish follows unless one refuses (prepare-duty.ts)
  if (agent.hooks.stop.length > 0) return { drafts: [message], outcome: StepOutcome.Finished };
  return {
    drafts: [
      message,
      draftEvent(system, 'state_change', { status: 'finished', reason: 'the agent replied without calling a tool' }),
    ],
    outcome: StepOutcome.Finished,
  };
}

/**
 * A reply answered with a correction (`drafts`, which the model reads next turn), unless it is
 * the `limits.maxInvalidRepliesInRow`-th in a row (`invalidRepliesInRow`): then the run ends with
 * an error saying why, instead of asking the model again and again.
 */
function correction(turn: Turn, drafts: readonly EventDraft[], outcome: StepOutcome, why: string): StepResult {
  const limit = turn.agent.limits.maxInvalidRepliesInRow;
  const inRow = invalidRepliesInRow(turn.events, turn.runStart, limit) + 1;
  if (inRow < limit) return { drafts, outcome };
  const detail =
    `The model's last ${inRow} replies in a row could not be used (the last: ${why.length > 400 ? `${why.slice(0, 400)}…` : why}). ` +
    'Check that the model and its server support tool calling (a server without native tool calls needs llm.nativeToolCalling set to false), or raise limits.maxInvalidRepliesInRow.';
  const stopped = stop(turn.system, 'invalid_replies', detail, 'error');
  return { drafts: [...drafts, ...stopped.drafts], outcome: stopped.outcome };
}

function textToolCallNudge(name: string): string {
  return (
    `Your last reply wrote a call to the tool "${name}" as text. Text is not run: call tools through the tool-calling interface (a function call), ` +
    'not by writing the call in your reply. Make the call again that way, or reply with your final answer if you are done.'
  );
}

function environmentMessage(context: DraftContext, text: string): EventDraft {
  return draftEvent({ ...context, source: 'environment' }, 'message', {
    role: 'user',
    content: [{ type: 'text', text }],
  });
}

function llmFailure(error: unknown, turn: Turn): StepResult {
  if (!isLlmError(error)) throw error;
  const { context, system } = turn;
  switch (error.code) {
    case 'cancelled':
      throw error;
    case 'context_window_exceeded':
      return {
        drafts: [
          draftEvent(system, 'condensation_request', { reason: 'the model reported a context window overflow' }),
        ],
        outcome: StepOutcome.CondensationRequested,
      };
    case 'content_filter':
      return correction(
        turn,
        [environmentMessage(context, CONTENT_FILTER_NUDGE)],
        StepOutcome.Continue,
        "the provider's content filter blocked the reply",
      );
    default:
      return {
        drafts: [
          draftEvent(system, 'conversation_error', { code: `llm_${error.code}`, detail: error.message }),
          draftEvent(system, 'state_change', { status: 'error', reason: `the model call failed (${error.code})` }),
        ],
        outcome: StepOutcome.Error,
      };
  }
}

function stop(system: DraftContext, code: string, detail: string, status: 'error' | 'stuck'): StepResult {
  return {
    drafts: [
      draftEvent(system, 'conversation_error', { code, detail }),
      draftEvent(system, 'state_change', { status, reason: detail }),
    ],
    outcome: status === 'stuck' ? StepOutcome.Stuck : StepOutcome.Error,
  };
}
