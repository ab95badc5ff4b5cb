import { DBOS } from '@dbos-inc/dbos-sdk';
import type { PeerOptions } from './figures.js';
import type { Decision, ScriptedLoop } from './loop.js';
import type { PeerEngine } from './measure.js';
import { PostgresStats } from './postgres-stats.js';

/**
 * DBOS Transact: a conversation is a workflow (its id the conversation's), the model call and the
 * tool each a step (`DBOS.runStep`), whose output DBOS records in its system database before the
 * workflow goes on. Its defaults otherwise (a pool of 10 connections, LISTEN/NOTIFY).
 */
export async function startDbos(loop: ScriptedLoop, options: PeerOptions): Promise<PeerEngine> {
  const databaseUrl = options.databaseUrl;
  if (!databaseUrl) throw new Error('the DBOS peer needs a database');
  DBOS.setConfig({ name: 'flotilla-peers', systemDatabaseUrl: databaseUrl, logLevel: 'warn' });
  const conversationWorkflow = DBOS.registerWorkflow(
    async (conversation: string, maxSteps: number): Promise<number> => {
      for (let step = 0; ; step += 1) {
        const decision: Decision = await DBOS.runStep(() => loop.model(conversation, step, maxSteps), {
          name: 'model',
        });
        if (decision.kind === 'finish') return step;
        await DBOS.runStep(async () => loop.tool(conversation, decision), { name: 'tool' });
      }
    },
    { name: 'conversation' },
  );
  await DBOS.launch();
  const stats = await PostgresStats.open(databaseUrl);
  return {
    name: 'DBOS',
    async run(conversation, maxSteps) {
      const handle = await DBOS.startWorkflow(conversationWorkflow, { workflowID: conversation })(
        conversation,
        maxSteps,
      );
      await handle.getResult();
    },
    async processes() {
      return new Map([
        ['node (DBOS, model, tool)', [process.pid]],
        ['postgres', await stats.processes()],
      ]);
    },
    async beginWrites(scope) {
      const finish = await stats.beginWrites(scope);
      return (steps) => finish(steps);
    },
    async close() {
      await stats.close();
      await DBOS.shutdown();
    },
  };
}
