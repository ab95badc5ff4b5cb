import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@flotilla/events';
import { encodeCommit, placeEvents, type EventLog } from '@flotilla/log';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { auditAll, auditConversation } from './audit-conversation.js';
import { AuditRule } from './audit-rule.js';
import { cleanConversation, draftsFor } from './test-support/drafts.js';
import { appendAll, auditFixture, type AuditFixture } from './test-support/nats-fixture.js';

let fixture: AuditFixture;
let nc: NatsConnection;

beforeAll(async () => {
  fixture = await auditFixture();
  nc = fixture.nc;
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

describe('auditConversation against a real log', () => {
  it('passes a clean conversation and an empty one', async () => {
    const log = await fixture.openLog();
    const ref = { tenant: 'acme', conversation: 'clean' };
    const stored = await appendAll(log, ref, cleanConversation(draftsFor(ref)));
    const report = await auditConversation(log, ref);
    expect(report.violations).toEqual([]);
    expect(report).toMatchObject({
      commits: stored.length,
      events: stored.at(-1)!.lastSeq,
      finalStatus: 'idle',
      tail: { streamSeq: stored.at(-1)!.streamSeq },
    });
    const empty = await auditConversation(log, { tenant: 'acme', conversation: 'nothing' });
    expect(empty).toMatchObject({ commits: 0, events: 0, violations: [] });
  });

  it('reports a foreign message on the subject, and keeps auditing after it', async () => {
    const log = await fixture.openLog();
    const ref = { tenant: 'acme', conversation: 'foreign' };
    const d = draftsFor(ref);
    const first = await appendAll(log, ref, [[d.userMessage(), d.status('running')]]);
    const ack = await jetstream(nc).publish(log.subject(ref), 'hello from someone else');
    const tail = { streamSeq: ack.seq, lastSeq: first[0]!.lastSeq };
    await appendAll(log, ref, [[d.usage(), d.assistantMessage(), d.status('finished')]], tail);
    const report = await auditConversation(log, ref);
    expect(report.violations).toEqual([
      { rule: AuditRule.InvalidMessage, streamSeq: ack.seq, detail: expect.stringContaining('foreign') },
    ]);
    expect(report).toMatchObject({ commits: 2, finalStatus: 'finished', summary: { invalidMessages: 1 } });
  });

  it('reports a commit that skips seqs, which the log reader would silently drop', async () => {
    const log = await fixture.openLog();
    const ref = { tenant: 'acme', conversation: 'gap' };
    const d = draftsFor(ref);
    const [first] = await appendAll(log, ref, [[d.userMessage(), d.status('running')]]);
    const encoded = encodeCommit(newId(), ref, placeEvents(ref, [d.userMessage('late')], first!.lastSeq + 3));
    const hdrs = headers();
    for (const [key, values] of encoded.headers) hdrs.set(key, values[0]!);
    await jetstream(nc).publish(log.subject(ref), encoded.data, { headers: hdrs });
    const report = await auditConversation(log, ref);
    expect(report.violations).toEqual([
      expect.objectContaining({ rule: AuditRule.SeqNotContiguous, seq: first!.lastSeq + 4 }),
    ]);
  });

  it('reports an action never answered at rest', async () => {
    const log = await fixture.openLog();
    const ref = { tenant: 'acme', conversation: 'abandoned' };
    const d = draftsFor(ref);
    const action = d.action();
    await appendAll(log, ref, [[d.userMessage(), d.status('running')], [d.usage(), action], [d.status('error')]]);
    const report = await auditConversation(log, ref);
    expect(report.violations.map((violation) => violation.rule)).toEqual([AuditRule.PendingAtRest]);
  });
});

describe('auditAll', () => {
  it('audits every conversation on the stream, or one tenant, and reports stray subjects', async () => {
    const log: EventLog = await fixture.openLog();
    const refs = [
      { tenant: 'acme', conversation: 'a1' },
      { tenant: 'acme', conversation: 'a2' },
      { tenant: 'globex', conversation: 'g1' },
    ];
    for (const ref of refs) await appendAll(log, ref, cleanConversation(draftsFor(ref)));
    await jetstream(nc).publish(log.subject(refs[1]!), 'junk');
    await jetstream(nc).publish(`${log.subjectPrefix}.bad+tenant.c1.user`, 'junk');

    const all = await auditAll(log);
    expect(
      all.reports.map((report) => [
        report.conversation.conversation,
        report.violations.map((violation) => violation.rule),
      ]),
    ).toEqual([
      ['a1', []],
      ['a2', [AuditRule.InvalidMessage]],
      ['g1', []],
    ]);
    // stored with the partition the stream appends
    expect(all.strays).toEqual([
      {
        subject: expect.stringMatching(
          new RegExp(`^${log.subjectPrefix.replaceAll('.', '\\.')}\\.bad\\+tenant\\.c1\\.user\\.\\d+$`),
        ),
        messages: 1,
      },
    ]);

    const seen: string[] = [];
    const globex = await auditAll(log, {
      tenant: 'globex',
      onReport: (report) => seen.push(report.conversation.conversation),
    });
    expect(globex.reports.map((report) => report.conversation)).toEqual([refs[2]]);
    expect(globex.strays).toEqual([]);
    expect(seen).toEqual(['g1']);
  });
});
