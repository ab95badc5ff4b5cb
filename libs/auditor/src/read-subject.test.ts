import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditConversation } from './audit-conversation.js';
import { readSubject } from './read-subject.js';
import { draftsFor } from './test-support/drafts.js';
import { appendAll, auditFixture, type AuditFixture } from './test-support/nats-fixture.js';

let fixture: AuditFixture;

beforeAll(async () => {
  fixture = await auditFixture();
});
afterAll(async () => {
  await fixture?.[Symbol.asyncDispose]();
});

describe('readSubject', () => {
  it('reads a conversation of several direct-get batches whole, in order, and creates no consumer', async () => {
    const log = await fixture.openLog();
    const ref = { tenant: 'acme', conversation: 'long' };
    const d = draftsFor(ref);
    const commits = Array.from({ length: 2_500 }, (_, index) => [d.userMessage(`note ${index}`)]);
    const stored = await appendAll(log, ref, commits);
    const counts: number[] = [];
    const sampling = setInterval(
      () =>
        void log.jsm.streams.info(log.streamName).then(
          (info) => counts.push(info.state.consumer_count),
          () => undefined,
        ),
      5,
    );
    try {
      const seqs: number[] = [];
      for await (const entry of readSubject(log, ref)) if (entry.kind === 'commit') seqs.push(entry.commit.streamSeq);
      expect(seqs).toEqual(stored.map((commit) => commit.streamSeq));
      const report = await auditConversation(log, ref);
      expect(report).toMatchObject({ commits: stored.length, events: stored.length });
    } finally {
      clearInterval(sampling);
    }
    expect(counts.length).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBe(0);
    expect((await log.jsm.streams.info(log.streamName)).state.consumer_count).toBe(0);
  });
});
