import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { PeerOptions } from './figures.js';
import type { Decision, ScriptedLoop, ToolResult } from './loop.js';
import type { PeerEngine } from './measure.js';
import { PostgresStats } from './postgres-stats.js';

type Message =
  { readonly role: 'assistant'; readonly decision: Decision } | { readonly role: 'tool'; readonly result: ToolResult };

/**
 * LangGraph.js with its PostgreSQL checkpointer: a conversation is a thread, the agent's graph
 * a model node and a tool node in a loop over a state of messages (appended to, as an agent's
 * are), run with durability "sync": each super-step's checkpoint is stored before the next starts.
 * The checkpointer's own pool (pg's default, 10 connections).
 */
export async function startLangGraph(loop: ScriptedLoop, options: PeerOptions): Promise<PeerEngine> {
  const databaseUrl = options.databaseUrl;
  if (!databaseUrl) throw new Error('the LangGraph peer needs a database');
  const State = Annotation.Root({
    conversation: Annotation<string>(),
    maxSteps: Annotation<number>(),
    step: Annotation<number>({ reducer: (_, next) => next, default: () => 0 }),
    messages: Annotation<Message[]>({ reducer: (messages, added) => messages.concat(added), default: () => [] }),
  });
  const lastDecision = (state: typeof State.State): Decision => {
    const last = state.messages.at(-1);
    if (last?.role !== 'assistant') throw new Error(`${state.conversation}: the last message is not the model's`);
    return last.decision;
  };
  const checkpointer = PostgresSaver.fromConnString(databaseUrl);
  await checkpointer.setup();
  const graph = new StateGraph(State)
    .addNode('model', async (state) => ({
      messages: [
        { role: 'assistant' as const, decision: await loop.model(state.conversation, state.step, state.maxSteps) },
      ],
    }))
    .addNode('tool', (state) => ({
      messages: [{ role: 'tool' as const, result: loop.tool(state.conversation, lastDecision(state)) }],
      step: state.step + 1,
    }))
    .addEdge(START, 'model')
    .addConditionalEdges('model', (state) => (lastDecision(state).kind === 'finish' ? END : 'tool'), ['tool', END])
    .addEdge('tool', 'model')
    .compile({ checkpointer });
  const stats = await PostgresStats.open(databaseUrl);
  return {
    name: 'LangGraph',
    async run(conversation, maxSteps) {
      // two super-steps per step; the limit only has to stay out of the way
      await graph.invoke(
        { conversation, maxSteps },
        { configurable: { thread_id: conversation }, durability: 'sync', recursionLimit: 1_000_000_000 },
      );
    },
    async processes() {
      return new Map([
        ['node (LangGraph, model, tool)', [process.pid]],
        ['postgres', await stats.processes()],
      ]);
    },
    async beginWrites(scope) {
      const finish = await stats.beginWrites(scope);
      return (steps) => finish(steps);
    },
    async close() {
      await stats.close();
      await checkpointer.end();
    },
  };
}
