import { join } from 'node:path';
import { ConversationCache, RunnerRegistry, runService } from '@flotilla/runtime';
import { loadSandboxSettings, openSandboxProvider, SandboxPool, sandboxStateDir } from '@flotilla/sandbox';
import { loadSecretsKey, maskSecrets, SecretReader, SecretScanner } from '@flotilla/secrets';
import { createBuiltinTools, ToolRegistry } from '@flotilla/tools';
import { ToolRunner } from '@flotilla/workers';

await runService({
  service: 'tool-runner',
  // what waits for a slot is served fairly across tenants (a flood's long tools hold the slots)
  defaults: { concurrency: 32, lookahead: 10_000 },
  async start({ config, log, nc, interrupts, metrics, logger, partitionOwner }) {
    const sandboxSettings = loadSandboxSettings();
    // refuses to start when the configured kind cannot run here or does not isolate
    const provider = await openSandboxProvider(sandboxSettings, {
      stateDir: await sandboxStateDir(join(config.home, 'sandbox')),
      ownedRoot: config.home,
      workspaces: config.workspaces,
    });
    const sandbox = provider.describe();
    if (!sandbox.isolated)
      logger.warn(
        { sandbox },
        'FLOTILLA_SANDBOX=none: the agent runs commands UNSANDBOXED, with this service’s privileges; use it only for a trusted single user',
      );
    else if (sandbox.warning) logger.warn({ sandbox }, sandbox.warning);
    else logger.info({ sandbox }, 'sandbox ready');
    const sandboxes = new SandboxPool(provider, {
      idleStopMs: sandboxSettings.idleStopMs,
      onError: (error, id) => logger.warn({ err: error, sandbox: id }, 'stopping a sandbox failed'),
    });
    const secretsKey = loadSecretsKey();
    if (!secretsKey) logger.warn('no FLOTILLA_SECRETS_KEY(_FILE): conversations get no secrets');
    const secrets = secretsKey
      ? await SecretReader.open(nc, { key: secretsKey, replicas: config.storage.replicas })
      : undefined;
    // revealed at every batch of actions: from memory, kept by a watch, not a bucket listing each time
    await secrets?.follow();
    const runners = await RunnerRegistry.open(nc, {
      replicas: config.storage.replicas,
      livenessMs: config.runnerLivenessMs,
      sandbox,
    });
    const tools = new ToolRegistry(createBuiltinTools());
    const runner = new ToolRunner({
      runnerId: config.instanceId,
      log,
      cache: new ConversationCache(log, config.cacheConversations, config.cacheEvents),
      tools,
      runners,
      interrupts,
      nc,
      metrics,
      logger,
      workspaceRoot: config.workspaces,
      privateRoot: join(config.home, 'conversations'),
      sandboxes,
      ...(secrets
        ? {
            secrets,
            mask: maskSecrets,
            scanSecrets: (values: Readonly<Record<string, string>>) => new SecretScanner(values),
          }
        : {}),
      workspaceQuotaBytes: sandboxSettings.limits.workspaceBytes,
      partitionOwner,
    });
    await runner.start();
    return {
      handler: runner.handler(),
      async stop() {
        await runner.stop();
        await tools.close();
        await sandboxes.closeAll();
        secrets?.close();
      },
    };
  },
});
