import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LanguageModel } from '@flotilla/llm';
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
      return new LocalConversation({ log, ref: { tenant: 'acme', conversation: uniqueName('c') }, agent: config, llm, tools, workspace });
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
