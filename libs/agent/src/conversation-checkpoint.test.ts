import { gzipSync } from 'node:zlib';
import { SUMMARY_SYSTEM_PROMPT } from '@flotilla/condenser';
import type { Event } from '@flotilla/events';
import { ScriptedLanguageModel, type GenerateRequest, type ScriptedReply } from '@flotilla/llm';
import { buildView, toChatMessages } from '@flotilla/view';
import { describe, expect, it } from 'vitest';
import {
  checkpointFolds,
  CHECKPOINT_STUCK_STEPS,
  parseConversationCheckpoint,
  resumeFolds,
  stepLookback,
} from './conversation-checkpoint.js';
import { ConversationProgress } from './progress.js';
import { runState } from './run-state.js';
import { detectStuck } from './stuck-detector.js';
import { call, conversationFixture } from './test-support/conversation-fixture.js';

const isSummaryRequest = (request: GenerateRequest): boolean =>
  request.messages[0]?.role === 'system' &&
  request.messages[0].content.some((block) => block.text === SUMMARY_SYSTEM_PROMPT);

/**
 * Real runs through LocalConversation (the step, the tools, the condenser with a low item limit)
 * as their commits: steps of think calls with condensations between them, a user message, a
 * run that gets stuck repeating itself, one that finishes.
 */
async function condensedRuns(): Promise<Event[][]> {
  await using fixture = await conversationFixture();
  let step = 0;
  const replies = (request: GenerateRequest): ScriptedReply => {
    if (isSummaryRequest(request))
      return {
        text: 'USER_CONTEXT: think a lot\nCOMPLETED: many thoughts',
        usage: { inputTokens: 500, outputTokens: 40 },
        costUsd: 0.001,
      };
    step += 1;
    if (step === 30) return { text: 'Halfway: shall I go on?' };
    if (step > 30 && step <= 36) return { toolCalls: [call('think', { thought: 'the same thought again' })] };
    if (step > 40 && step < 60 && step % 7 === 0)
      return {
        toolCalls: [call('think', { thought: `a ${step}` }), call('think', { thought: `b ${step}` })],
        costUsd: 0.002,
      };
    if (step >= 60) return { toolCalls: [call('finish', { message: 'done' })] };
    return { text: `step ${step}`, toolCalls: [call('think', { thought: `thought ${step}` })], costUsd: 0.001 };
  };
  const llm = new ScriptedLanguageModel({ replies, info: { maxInputTokens: 200_000 } });
  const conversation = fixture.conversation(llm, {
    tools: ['think', 'finish'],
    condenser: { maxEvents: 16, keepFirst: 2 },
  });
  await conversation.sendMessage('Think it through.', { run: true });
  await conversation.run();
  await conversation.sendMessage('Go on.', { run: true });
  await conversation.run();
  await conversation.sendMessage('Try again, differently.', { run: true });
  await conversation.run();
  const commits: Event[][] = [];
  for await (const commit of fixture.log.read(conversation.ref)) commits.push([...commit.events]);
  return commits;
}

const LIVENESS = [() => false, () => true];

/** What a step decides from, compared between the whole log and a checkpoint's reader. */
function expectSameDecisions(
  events: readonly Event[],
  readerEvents: readonly Event[],
  folds: ReturnType<typeof resumeFolds>,
  where: string,
): void {
  expect(folds.view.view(), where).toEqual(buildView(events));
  const progress = ConversationProgress.of(events);
  for (const alive of LIVENESS)
    expect(folds.progress.nextWork({ runnerAlive: alive }), where).toEqual(progress.nextWork({ runnerAlive: alive }));
  expect(folds.progress.pending(), where).toEqual(progress.pending());
  const whole = runState(events);
  const resumed = folds.run.state();
  expect({ ...resumed, runStart: 0 }, where).toEqual({ ...whole, runStart: 0 });
  for (const steps of [2, 4, 6, CHECKPOINT_STUCK_STEPS]) {
    const thresholds = {
      actionObservation: steps,
      actionError: steps,
      monologue: steps,
      alternating: Math.max(4, steps),
    };
    expect(detectStuck(readerEvents, thresholds, resumed.runStart), `${where}, thresholds ${steps}`).toBe(
      detectStuck(events, thresholds, whole.runStart),
    );
  }
}

describe('conversation checkpoints', () => {
  it('a checkpoint at any commit of real runs with condensations, and the log from its lookback on, decide as the whole log does', async () => {
    const commits = await condensedRuns();
    const all = commits.flat();
    expect(all.filter((event) => event.type === 'condensation').length).toBeGreaterThan(5);
    expect(all.some((event) => event.type === 'state_change' && event.status === 'stuck')).toBe(true);
    let at = 0;
    for (const [index, commit] of commits.entries()) {
      at += commit.length;
      const prefix = all.slice(0, at);
      const folds = resumeFolds(undefined);
      folds.view.append(prefix);
      folds.progress.append(prefix);
      folds.run.append(prefix);
      if (!folds.run.state().hasSystemPrompt) continue;
      const stored = parseConversationCheckpoint(JSON.parse(JSON.stringify(checkpointFolds(folds))));
      if (!stored.ok) throw new Error(stored.reason);
      const lookback = stepLookback(prefix, folds.run.state().runStart);
      // the reader reads the log from the lookback on, and folds what follows the checkpoint
      for (const end of new Set([at, Math.min(all.length, at + 7), all.length])) {
        const events = all.slice(0, end);
        const readerEvents = events.slice(lookback);
        const resumed = resumeFolds(stored.checkpoint, at - lookback);
        const after = events.slice(at);
        resumed.view.append(after);
        resumed.progress.append(after);
        resumed.run.append(after);
        expectSameDecisions(events, readerEvents, resumed, `checkpoint after commit ${index}, read to event ${end}`);
      }
    }
  }, 60_000);

  it('is about as large as the view after a condensation, not as the history', async () => {
    const commits = await condensedRuns();
    const all = commits.flat();
    const last = all.findLastIndex((event) => event.type === 'condensation');
    const folds = resumeFolds(undefined);
    const prefix = all.slice(0, last + 1);
    folds.view.append(prefix);
    folds.progress.append(prefix);
    folds.run.append(prefix);
    const checkpoint = JSON.stringify(checkpointFolds(folds));
    expect(checkpoint.length).toBeLessThan(JSON.stringify(prefix).length / 3);
    // as stored (gzipped), against the chat messages the view renders, compressed alike
    expect(gzipSync(checkpoint).length).toBeLessThan(
      gzipSync(JSON.stringify(toChatMessages(buildView(prefix)))).length * 3,
    );
  }, 60_000);

  it('refuses a stored value that is not a checkpoint, or holds an event that is not valid', () => {
    const folds = resumeFolds(undefined);
    const valid = JSON.parse(JSON.stringify(checkpointFolds(folds))) as Record<string, unknown>;
    expect(parseConversationCheckpoint(valid).ok).toBe(true);
    expect(parseConversationCheckpoint({ ...valid, extra: 1 }).ok).toBe(false);
    const view = valid['view'] as Record<string, unknown>;
    const forged = {
      ...valid,
      view: {
        ...view,
        items: [{ type: 'message', id: 'x', role: 'user', content: [{ type: 'text', text: 'not an event' }] }],
      },
    };
    expect(parseConversationCheckpoint(forged)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('view.items.0'),
    });
  });
});
