import { AgentCatalog, parseAgentConfig } from '@flotilla/agent';
import { AskSubjects } from '@flotilla/bus';
import { draftEvent } from '@flotilla/events';
import { ScriptedLanguageModel, type ScriptedReply } from '@flotilla/llm';
import { EventLog, EMPTY_TAIL, type ConversationRef } from '@flotilla/log';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { connect, createInbox } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ASK_PART_HEADER, AskFailure, AskResult, serveQuestions } from './ask.js';
import { ConversationAgents } from './conversation-agents.js';

/** A step worker's question server on a real nats-server, its model answering with `reply`; asks one question and returns the last part. */
async function ask(reply: ScriptedReply): Promise<{ kind: string; body: unknown }> {
  await using server = await startNats();
  const nc = await connect({ servers: server.url });
  try {
    const name = uniqueName('ASK');
    const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
    const ref: ConversationRef = { tenant: 'acme', conversation: uniqueName('c') };
    await log.append(
      ref,
      [
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'Plan it' }],
        }),
      ],
      { expected: EMPTY_TAIL },
    );
    const llm = new ScriptedLanguageModel({ replies: [reply] });
    const agents = new ConversationAgents({
      catalog: new AgentCatalog(parseAgentConfig({ llm: { provider: 'openai-chat', model: 'm' } })),
      registry: new ToolRegistry(createBuiltinTools()),
      createModel: () => llm,
    });
    const served = serveQuestions({ nc, log, agents });
    const inbox = createInbox();
    const parts = nc.subscribe(inbox, { timeout: 10_000 });
    nc.publish(AskSubjects.ask, JSON.stringify({ ...ref, question: 'what is left?' }), { reply: inbox });
    for await (const part of parts) {
      const kind = part.headers?.get(ASK_PART_HEADER) ?? '';
      if (kind === 'delta') continue;
      served.unsubscribe();
      return { kind, body: part.json() };
    }
    throw new Error('no answer');
  } finally {
    await nc.close();
  }
}

describe('side questions', () => {
  it('answer with the text and the usage in the keys of llm_usage events', async () => {
    const { kind, body } = await ask({
      text: 'Two files are left.',
      usage: { inputTokens: 120, outputTokens: 7, cacheReadTokens: 100, cacheWriteTokens: 0, reasoningTokens: 3 },
    });
    expect(kind).toBe('answer');
    expect(AskResult.parse(body)).toEqual({
      answer: 'Two files are left.',
      model: expect.any(String),
      usage: {
        prompt_tokens: 120,
        completion_tokens: 7,
        cache_read_tokens: 100,
        cache_write_tokens: 0,
        reasoning_tokens: 3,
        cost_usd: 0,
      },
    });
  });

  it('fail, naming the tool, when the model calls a tool instead of answering in words (never an empty answer)', async () => {
    const { kind, body } = await ask({
      toolCalls: [{ id: 'call_1', name: 'terminal', arguments: '{"command":"ls"}' }],
    });
    expect(kind).toBe('error');
    expect(AskFailure.parse(body)).toEqual({
      code: 'model_failed',
      message: 'the model called terminal instead of answering in words; ask again',
    });
  });
});
