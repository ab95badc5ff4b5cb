import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { EventLog } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { connect } from '@nats-io/transport-node';
import { writeConversation } from './conversation-fixture.js';
import { buildView, toChatMessages } from '@flotilla/view';
await using server = await NatsServerProcess.start();
const nc = await connect({ servers: server.url });
const log = await EventLog.open(nc, { streamName: 'X', subjectPrefix: 'x.ev' });
const ref = { tenant: 'b', conversation: 'c' };
await writeConversation(log, ref, 10000);
await log.readEvents(ref);
const session = new Session(); session.connect();
await session.post('Profiler.enable'); await session.post('Profiler.start');
for (let i = 0; i < 3; i++) { const t = performance.now(); const { events } = await log.readEvents(ref); const r = performance.now() - t; const v = buildView(events); const b = performance.now() - t - r; toChatMessages(v); console.log('read', r.toFixed(1), 'view', b.toFixed(1), 'all', (performance.now() - t).toFixed(1)); }
const { profile } = await session.post('Profiler.stop');
writeFileSync('/tmp/read.cpuprofile', JSON.stringify(profile));
await nc.close();
