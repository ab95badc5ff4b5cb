import { join } from 'node:path';
import { ConversationCache, RunnerRegistry, runService } from '@flotilla/runtime';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { ToolRunner } from '@flotilla/workers';

await runService({
  service: 'tool-runner',
  defaults: { concurrency: 32 },
  async start({ config, log, nc, interrupts, metrics, logger }) {
    const runners = await RunnerRegistry.open(nc, { livenessMs: Number(process.env['FLOTILLA_RUNNER_LIVENESS_MS'] ?? 10_000) });
    const tools = new ToolRegistry(createBuiltinTools());
    const runner = new ToolRunner({
      runnerId: config.instanceId,
      log,
      cache: new ConversationCache(log, 500),
      tools,
      runners,
      interrupts,
      nc,
      metrics,
      logger,
      workspaceRoot: process.env['FLOTILLA_WORKSPACES'] ?? join(config.home, 'workspaces'),
    });
    await runner.start();
    return {
      handler: runner.handler(),
      async stop() {
        await runner.stop();
        await tools.close();
      },
    };
  },
});
