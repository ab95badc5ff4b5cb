import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { appendWithRetry } from './append-with-retry.js';
import { EventLog } from './event-log.js';
import type { StoredCommit } from './stored-commit.js';
import { logFixture, newRef, userMessage } from './test-support/fixtures.js';

describe('concurrent writers on one conversation', () => {
  it('20 writers with conflict-retry: every commit exactly once, contiguous, no two on the same tail', async () => {
    await using fixture = await logFixture();
    const ref = newRef();
    // each writer has its own connection, like separate processes
    const writers = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const nc = await connect({ servers: fixture.server.url });
        return {
          nc,
          log: await EventLog.open(nc, {
            streamName: fixture.log.streamName,
            subjectPrefix: fixture.log.subjectPrefix,
          }),
        };
      }),
    );
    try {
      const results = await Promise.all(
        writers.flatMap(({ log }, writer) =>
          [0, 1, 2].map((round) =>
            appendWithRetry(log, ref, () => [
              userMessage(ref, `${writer}.${round}`),
              userMessage(ref, `${writer}.${round}.b`),
            ]),
          ),
        ),
      );
      const commits: StoredCommit[] = [];
      for await (const commit of fixture.log.read(ref)) commits.push(commit);
      expect(commits).toHaveLength(60);
      // every commit exactly once
      const texts = commits.map((commit) =>
        commit.events[0]?.type === 'message' ? commit.events[0].content[0] : undefined,
      );
      expect(new Set(texts.map((text) => JSON.stringify(text))).size).toBe(60);
      expect(new Set(results.map((result) => result?.id)).size).toBe(60);
      // positions contiguous, each commit built on the previous one's tail
      let expectedFirst = 1;
      for (const commit of commits) {
        expect(commit.firstSeq).toBe(expectedFirst);
        expect(commit.events.map((event) => event.seq)).toEqual([expectedFirst, expectedFirst + 1]);
        expectedFirst = commit.lastSeq + 1;
      }
      const firstSeqs = commits.map((commit) => commit.firstSeq);
      expect(new Set(firstSeqs).size).toBe(firstSeqs.length);
    } finally {
      await Promise.all(writers.map(({ nc }) => nc.close()));
    }
  });
});

describe('nats-server crash', () => {
  it('keeps every acknowledged commit across SIGKILL and restart; the writer reconnects by itself', async (context) => {
    await using fixture = await logFixture({ appendTimeoutMs: 1_000 });
    if (!fixture.server.canRestart) context.skip();
    const ref = newRef();
    const acknowledged: string[] = [];
    let stop = false;
    const writer = (async () => {
      for (let index = 0; !stop; index += 1) {
        const commit = await appendWithRetry(fixture.log, ref, () => [userMessage(ref, `m${index}`)], {
          transientBudgetMs: 30_000,
        });
        if (commit) acknowledged.push(`m${index}`);
      }
    })();
    await expect.poll(() => acknowledged.length, { timeout: 10_000 }).toBeGreaterThan(20);
    await fixture.server.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await fixture.server.restart();
    const afterRestart = acknowledged.length;
    await expect.poll(() => acknowledged.length, { timeout: 20_000 }).toBeGreaterThan(afterRestart + 20);
    stop = true;
    await writer;
    const { events } = await fixture.log.readEvents(ref);
    const stored = events.map((event) =>
      event.type === 'message' && event.content[0]?.type === 'text' ? event.content[0].text : '',
    );
    // every acknowledged commit is there, exactly once and in order; seqs contiguous
    expect(stored).toEqual(acknowledged);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  });
});
