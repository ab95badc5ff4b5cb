import { runService } from '@flotilla/runtime';
import { startWebhooks, WEBHOOKS_GROUP } from './webhooks-service.js';

// The webhooks service: tenants' webhooks, signed and delivered at least once (docs/api.md, "Webhooks").
await runService({
  service: 'webhooks',
  consumer: WEBHOOKS_GROUP,
  // its credential only reads the log: it waits for the stream instead of creating it
  createsStream: false,
  start: startWebhooks,
});
