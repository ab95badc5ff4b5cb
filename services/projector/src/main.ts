import { runService, servePurges } from '@flotilla/runtime';
import { SnapshotStore } from '@flotilla/state';
import { createProjectHandler } from '@flotilla/workers';

await runService({
  service: 'projector',
  // a conversation's newest commit holds its slot while it settles (createProjectHandler); the
  // snapshot trails the log by its settle period anyway, so commits come in batches (BatchedPull)
  defaults: { concurrency: 256, pullIntervalMs: 10 },
  async start({ config, log, nc, logger }) {
    const store = await SnapshotStore.open(nc, {
      replicas: config.storage.replicas,
      onCorrupt: (report) => logger.warn({ report }, 'corrupt snapshot: rebuilding it from the log'),
    });
    // the gateway's deletes: this service's credential is the only one that may purge
    const purges = servePurges(nc, log, logger);
    return { handler: createProjectHandler(log, store, { settleMs: config.projectorSettleMs }), stop: async () => purges.unsubscribe() };
  },
});
