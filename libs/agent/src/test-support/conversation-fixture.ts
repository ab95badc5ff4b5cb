import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Event } from '@flotilla/events';
import { ScriptedLanguageModel, type LanguageModel } from '@flotilla/llm';
import { EventLog } from '@flotilla/log';
import { startNats, uniqueName } from '@flotilla/testing';
import { createBuiltinTools, openWorkspace, ToolRegistry, type Workspace } from '@flotilla/tools';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { parseAgentConfig, type AgentConfigInput } from '../agent-config.js';
import { LocalConversation } from '../local-conversation.js';

export type ConversationFixture = AsyncDisposable & {
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly workspace: Workspace;
  readonly tools: ToolRegistry;
  conversation(llm: LanguageModel, agent?: Partial<AgentConfigInput>): LocalConversation;
};

/** A real nats-server, an event log on a unique stream, a temp workspace and the built-in tools. */
export async function conversationFixture(): Promise<ConversationFixture> {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const name = uniqueName('AG');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const root = await mkdtemp(join(tmpdir(), 'flotilla-ws-'));
  const workspace = await openWorkspace(root);
  const tools = new ToolRegistry(createBuiltinTools({ terminal: { softTimeoutSeconds: 5 } }));
  return {
    nc,
    log,
    workspace,
    tools,
    conversation(llm, agent = {}) {
      const config = parseAgentConfig({ llm: { provider: 'openai-chat', model: 'scripted' }, ...agent });
      return new LocalConversation({
        log,
        ref: { tenant: 'acme', conversation: uniqueName('c') },
        agent: config,
        llm,
        tools,
        workspace,
      });
    },
    async [Symbol.asyncDispose]() {
      await tools.close();
      await nc.close();
      await server[Symbol.asyncDispose]();
      await rm(root, { recursive: true, force: true });
    },
  };
}

let callCounter = 0;
/** A tool call as a model would send it. */
export function call(name: string, input: unknown): { id: string; name: string; arguments: string } {
  callCounter += 1;
  return { id: `call_${callCounter}`, name, arguments: typeof input === 'string' ? input : JSON.stringify(input) };
}

/**
 * Real runs through the fixture's conversations, as their commits' events: valid, parallel,
 * unknown-tool and malformed calls ending in finish, and a run that waits for confirmation of
 * every action and is approved.
 */
export async function realRunCommits(fixture: ConversationFixture): Promise<Event[][][]> {
  const runs = [
    {
      agent: {},
      replies: [
        { text: 'Thinking first.', toolCalls: [call('think', { thought: 'plan' })] },
        { toolCalls: [call('think', { thought: 'a' }), call('think', { thought: 'b' })] },
        { toolCalls: [call('no_such_tool', { x: 1 })] },
        { toolCalls: [call('think', '{not json')] },
        { toolCalls: [call('think', { thought: 'mixed' }), call('no_such_tool', {})] },
        { toolCalls: [call('finish', { message: 'done' })] },
      ],
    },
    {
      agent: { confirmation: { mode: 'always' as const } },
      replies: [
        { toolCalls: [call('think', { thought: 'risky?' })] },
        { toolCalls: [call('finish', { message: 'ok' })] },
      ],
    },
  ];
  const recorded: Event[][][] = [];
  for (const run of runs) {
    const conversation = fixture.conversation(new ScriptedLanguageModel({ replies: run.replies }), {
      tools: ['think', 'finish'],
      ...run.agent,
    });
    await conversation.sendMessage('go', { run: true });
    // run() approves what waits for confirmation and resumes, until the conversation rests
    for (let turn = 0; turn < 10 && (await conversation.run()) === 'waiting_for_confirmation'; turn += 1);
    const commits: Event[][] = [];
    for await (const commit of fixture.log.read(conversation.ref)) commits.push([...commit.events]);
    recorded.push(commits);
  }
  return recorded;
}
