import { auditConversation, formatReport, readSubject } from '@flotilla/auditor';
import { DEFAULT_STREAM_NAME } from '@flotilla/bus';
import { decodeCommit, type ConversationRef, type EventLog, type StoredCommit } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { basicViolations, effectCounts } from '../support/log-checks.js';
import { startTestSystem } from '../support/system.js';

/** One stored commit as a line of a failure's message. */
function commitLine(commit: StoredCommit): string {
  const events = commit.events.map(
    (event) => `${event.seq} ${event.type}${event.type === 'execution_started' ? ` by ${event.runner}` : ''}`,
  );
  return `#${commit.streamSeq} ${commit.id}: ${events.join(', ')}`;
}

/**
 * The conversation's messages for a failure's message: as the auditor reads them (direct-get
 * batches, which any replica may answer), and as the stream's leader answers them one by one.
 */
async function commitListing(log: EventLog, ref: ConversationRef): Promise<string> {
  const audited: string[] = [];
  for await (const entry of readSubject(log, ref))
    audited.push(
      entry.kind === 'commit' ? commitLine(entry.commit) : `#${entry.message.streamSeq} ${entry.message.reason}`,
    );
  const leader: string[] = [];
  for (let seq = 1; ;) {
    // a message get takes `next_by_subj` as a direct get does (nats.js types only `seq`)
    const query = { seq, next_by_subj: log.filter(ref) };
    const message = await log.jsm.streams.getMessage(log.streamName, query);
    if (!message) break;
    const decoded = decodeCommit(
      { subject: message.subject, seq: message.seq, data: message.data, headers: message.header },
      ref,
    );
    leader.push(decoded.ok ? commitLine(decoded.commit) : `#${message.seq} ${decoded.reason}`);
    seq = message.seq + 1;
  }
  return `as audited:\n${audited.join('\n')}\nfrom the leader:\n${leader.join('\n')}`;
}

describe('on a 3-node JetStream cluster (R3)', () => {
  it('loses no acknowledged commit when the events stream’s leader is SIGKILLed mid-run; services reconnect, every conversation finishes, the node catches up', async () => {
    await using system = await startTestSystem({ natsNodes: 3, stepWorkers: 2, toolRunners: 2 });
    const cluster = system.cluster!;
    const info = await system.log.jsm.streams.info(DEFAULT_STREAM_NAME);
    expect(info.config.num_replicas).toBe(3);
    for (const bucket of ['KV_flotilla_runners', 'KV_flotilla_workspaces', 'KV_flotilla_conversations']) {
      expect((await system.log.jsm.streams.info(bucket)).config.num_replicas, bucket).toBe(3);
    }

    const refs: ConversationRef[] = Array.from({ length: 32 }, (_, index) => ({
      tenant: `t${index % 4}`,
      conversation: `r3-${index}`,
    }));
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 6, sleep: 0.2 })));
    // let the conversations get going, then note what is acknowledged so far: every commit a read returns was stored by a quorum
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const acknowledged = new Map<string, string[]>();
    for (const ref of refs)
      acknowledged.set(
        ref.conversation,
        (await system.events(ref)).map((event) => event.id),
      );
    const before = [...acknowledged.values()].reduce((sum, ids) => sum + ids.length, 0);

    const leader = await cluster.streamLeader(DEFAULT_STREAM_NAME);
    await cluster.kill(leader);
    const newLeader = await cluster.streamLeader(DEFAULT_STREAM_NAME, 30_000);
    expect(newLeader).not.toBe(leader);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await cluster.restart(leader);

    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 150_000);
    // no action ran twice, none went missing (read first: a failure below shows these too)
    const effects = effectCounts(await system.readEffects());
    const repeated = [...effects].filter(([, count]) => count !== 1).map(([effect, count]) => `${effect} ×${count}`);
    const failures: string[] = [];
    let lost = 0;
    for (const ref of refs) {
      const events = await system.events(ref);
      expect(await system.status(ref), ref.conversation).toBe('finished');
      const ids = new Set(events.map((event) => event.id));
      lost += acknowledged.get(ref.conversation)!.filter((id) => !ids.has(id)).length;
      // the acknowledged history is a prefix of the final one, in order
      expect(events.slice(0, acknowledged.get(ref.conversation)!.length).map((event) => event.id)).toEqual(
        acknowledged.get(ref.conversation),
      );
      const report = await auditConversation(system.log, ref);
      const problems = basicViolations(events);
      if (problems.length > 0 || report.violations.length > 0)
        failures.push(
          `${ref.conversation}: ${problems.join('; ')} ${formatReport(report)}\n${await commitListing(system.log, ref)}`,
        );
    }
    expect(before).toBeGreaterThan(refs.length * 2);
    expect(lost).toBe(0);
    expect({ failures, repeated }).toEqual({ failures: [], repeated: [] });
    expect(effects.size).toBe(refs.length * 6);

    // the restarted node caught up: its own copy of the stream equals the leader's
    await cluster.waitCurrent(DEFAULT_STREAM_NAME, 60_000);
    const states = await Promise.all(cluster.nodes.map((_, index) => cluster.streamState(index, DEFAULT_STREAM_NAME)));
    const total = (await system.log.jsm.streams.info(DEFAULT_STREAM_NAME)).state.messages;
    expect(states.map((state) => state?.messages)).toEqual([total, total, total]);
    // every service process is still the one that started (they reconnected; none crashed)
    const exits = system.processes.flatMap((child) =>
      child.unexpectedExits.map(
        (exit) =>
          `${child.name} exited (code ${exit.code}, signal ${exit.signal}) after ${exit.ranMs} ms; its last lines:\n${exit.lastLines.join('\n')}`,
      ),
    );
    expect(exits).toEqual([]);
    expect(system.processes.filter((child) => !child.running).map((child) => child.name)).toEqual([]);
  }, 300_000);
});
