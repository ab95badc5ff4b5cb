import { describe, expect, it } from 'vitest';
import type { ConversationRef } from '@flotilla/log';
import { AuditFollower } from './audit-follower.js';
import type { Violation } from './audit-report.js';
import { AuditRule } from './audit-rule.js';
import { followStream } from './follow-stream.js';
import { appendAll, auditFixture } from './test-support/nats-fixture.js';
import { cleanConversation, draftsFor } from './test-support/drafts.js';

async function until(what: string, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('AuditFollower over a followed stream', () => {
  it('reports each violation once as its commit arrives, the end-of-log checks after a quiet period, and goes on after a nats-server restart', async () => {
    await using fixture = await auditFixture();
    const log = await fixture.openLog();
    const clean: ConversationRef = { tenant: 'acme', conversation: 'clean' };
    const forged: ConversationRef = { tenant: 'acme', conversation: 'forged' };
    const resting: ConversationRef = { tenant: 'globex', conversation: 'resting' };
    const found: { ref: ConversationRef; violation: Violation }[] = [];
    const follower = new AuditFollower(
      { violation: (ref, violation) => void found.push({ ref, violation }) },
      { subjectPrefix: log.subjectPrefix, settleMs: 300 },
    );
    const stop = new AbortController();
    let visited = 0;
    let retries = 0;
    const following = followStream(
      fixture.nc,
      {
        streamName: log.streamName,
        subjectPrefix: log.subjectPrefix,
        signal: stop.signal,
        onRetry: () => void (retries += 1),
      },
      ({ message }) => {
        visited += 1;
        follower.visit(message);
      },
    );

    const c = draftsFor(clean);
    const cleanCommits = await appendAll(log, clean, cleanConversation(c));
    // a step while idle: the commit itself shows it
    const f = draftsFor(forged);
    const forgedCommits = await appendAll(log, forged, [[f.userMessage()], [f.usage(), f.assistantMessage()]]);
    await until('the forged step reported', () => found.length > 0);
    expect(found).toEqual([
      {
        ref: forged,
        violation: expect.objectContaining({
          rule: AuditRule.StepWhileNotRunning,
          streamSeq: forgedCommits[1]!.streamSeq,
        }),
      },
    ]);

    // an action left unanswered while the conversation rests: only a quiet period shows it
    if (fixture.server.kind === 'process') {
      await fixture.server.restart();
      const deadline = Date.now() + 15_000;
      while (
        !(await log.jsm.streams.info(log.streamName).then(
          () => true,
          () => false,
        ))
      ) {
        if (Date.now() > deadline) throw new Error('the stream did not come back after the restart');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const r = draftsFor(resting);
    const action = r.action('terminal', { command: 'ls' });
    await appendAll(log, resting, [[r.userMessage(), r.status('running')], [r.usage(), action], [r.status('idle')]]);
    await until('the pending action at rest reported', () => found.length > 1);
    stop.abort();
    await following;
    follower.close();

    expect(found.slice(1)).toEqual([
      { ref: resting, violation: expect.objectContaining({ rule: AuditRule.PendingAtRest, seq: 4 }) },
    ]);
    expect(found.filter((entry) => entry.ref.conversation === 'clean')).toEqual([]);
    // every message once, across the restart: no gap, no repeat
    expect(visited).toBe(cleanCommits.length + forgedCommits.length + 3);
    expect(follower.conversations).toBe(3);
    if (fixture.server.kind === 'process') expect(retries).toBeGreaterThan(0);
  });
});
