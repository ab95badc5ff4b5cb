import { runService } from '@flotilla/runtime';
import { SnapshotStore } from '@flotilla/state';
import { createProjectHandler } from '@flotilla/workers';

await runService({
  service: 'projector',
  defaults: { concurrency: 64 },
  async start({ log, nc, logger }) {
    const store = await SnapshotStore.open(nc, {
      onCorrupt: (report) => logger.warn({ report }, 'corrupt snapshot: rebuilding it from the log'),
    });
    return { handler: createProjectHandler(log, store) };
  },
});
