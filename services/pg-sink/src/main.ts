import { runService } from '@flotilla/runtime';
import { SINK_GROUP, startSink } from './sink-service.js';

// The PostgreSQL sink: the events stream into tables a data team can query (docs/analytics.md).
await runService({
  service: 'pg-sink',
  consumer: SINK_GROUP,
  // its credential only reads the log: it waits for the stream instead of creating it
  createsStream: false,
  // the writer keeps each conversation's commits in order (one lane each), writing those it holds together
  concurrentPerConversation: true,
  // commits in flight: those that arrive while a transaction is under way are written together in the next
  defaults: { concurrency: 256, pullIntervalMs: 10 },
  start: startSink,
});
