import { runService } from '@flotilla/runtime';
import { SINK_GROUP, startSink } from './sink-service.js';

// The PostgreSQL sink: the events stream into tables a data team can query (docs/analytics.md).
await runService({
  service: 'pg-sink',
  consumer: SINK_GROUP,
  // its credential only reads the log: it waits for the stream instead of creating it
  createsStream: false,
  // one PostgreSQL connection per commit written at once; commits pulled in batches
  defaults: { concurrency: 16, pullIntervalMs: 10 },
  start: startSink,
});
