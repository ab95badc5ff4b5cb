import { subjectPartition, type ConversationRef } from '@flotilla/log';
import {
  RunnerHeader,
  RunnerSubjects,
  type CommitHandler,
  type Delivery,
  type HandleOutcome,
  type Logger,
  type WorkspaceOwner,
} from '@flotilla/runtime';
import { inSpan, TRACEPARENT_HEADER } from '@flotilla/tracing';
import { headers } from '@nats-io/transport-node';
import { isOutcome, isStillTail, loadDelivered, NOT_TAIL } from './at-tail.js';
import type { BatchExecution } from './batch-execution.js';
import { commitSpan } from './commit-span.js';
import type { Forwarded } from './runner-messages.js';
import type { ToolRunnerContext } from './tool-runner-context.js';

/**
 * The tool runner's handler of delivered commits: decides from the log what is due, and has the
 * workspace's owner run it. This runner runs it when it owns the workspace, or when no live
 * runner does and this one owns the conversation's partition (it claims it, taking a dead owner's
 * over); a delivery for a workspace another live runner owns is forwarded to it (with the commit
 * delivered), and that runner runs the batch. One no live runner owns is forwarded to the owner
 * of its partition, to claim.
 */
export function createDeliveryHandler(context: ToolRunnerContext, batches: BatchExecution): CommitHandler {
  const { deps, inForce, ownership } = context;
  return async (delivery) => {
    const loaded = await loadDelivered(delivery, deps.log, deps.cache);
    if (isOutcome(loaded)) return loaded;
    const { ref, conversation } = loaded;
    const work = await batches.decide(conversation.events, batches.busy(ref));
    if (work.kind === 'in_progress') {
      if (!(await isStillTail(delivery, ref, deps.log, deps.cache.tails, conversation.tail.streamSeq))) return NOT_TAIL;
      // Someone (maybe us) is running these. Never ack on a liveness judgement: the runner may
      // die before it appends, so look again later until the results are in the log.
      return { ack: false, outcome: 'in_progress', delayMs: Math.ceil(deps.runners.livenessMs / 2) };
    }
    // the workspace's context is read by its owner, as its actions are run; so are its MCP servers listed, before the step that may use them
    if (work.kind !== 'execute' && work.kind !== 'prepare' && inForce.mcpOwed(work, conversation.events) === undefined)
      return { ack: true, outcome: 'nothing_to_run' };

    // the workspace's owner runs the batch (a sub-agent's shared workspace: its parent's)
    const home = inForce.home(ref, conversation.events);
    if (ownership.ownsRecently(home)) {
      await inSpan('tool_batch', commitSpan(delivery, ref), () =>
        batches.executeFor(ref, false, delivery.signal, conversation),
      );
      return { ack: true, outcome: 'executed' };
    }
    // another live runner that owns it, remembered while its heartbeat says alive, else read
    const remembered = ownership.peerOwner(home);
    const asked = Date.now();
    const owner = remembered === undefined ? await deps.runners.owner(home) : undefined;
    const peer =
      remembered ??
      (owner?.runner && owner.runner !== deps.runnerId && (await ownership.rememberPeer(home, owner.runner))
        ? owner.runner
        : undefined);
    if (peer !== undefined) return await forwardWake(context, delivery, ref, home, peer);
    // no other live runner owns it: unless it is this one's already, the owner of its partition
    // takes it, which the group's commits of the conversation go to (a commit delivered elsewhere:
    // that owner was full, or between pulls)
    const holder = owner?.runner === deps.runnerId ? undefined : holderOf(context, delivery, ref, home);
    if (holder !== undefined) return await forwardWake(context, delivery, ref, home, holder, { claim: true });
    const taken = await takeWorkspace(context, home, owner, asked, delivery.logger);
    if (!taken.taken) return { ack: false, outcome: 'claim_lost', delayMs: 200 };
    const { tookOver } = taken;
    await inSpan('tool_batch', commitSpan(delivery, ref, { 'flotilla.took_over': tookOver }), () =>
      batches.executeFor(ref, tookOver, delivery.signal, conversation),
    );
    return { ack: true, outcome: 'executed' };
  };
}

/**
 * The live runner that owns the partition of the delivered commit, when it is another runner and
 * the workspace is the conversation's own (a sub-agent's shared workspace follows its parent's
 * claims, wherever its own commits go).
 */
function holderOf(
  { deps }: ToolRunnerContext,
  delivery: Delivery,
  ref: ConversationRef,
  home: ConversationRef,
): string | undefined {
  if (home.tenant !== ref.tenant || home.conversation !== ref.conversation) return undefined;
  const partition = subjectPartition(deps.log.subjectPrefix, delivery.subject);
  const holder = partition === undefined ? undefined : deps.partitionOwner?.(partition);
  return holder === deps.runnerId ? undefined : holder;
}

/**
 * Takes the workspace for this runner, by CAS against `owner` (read at `asked`: none, a dead
 * runner, or this one); whether it holds it now, and whether it took it over from a dead runner
 * (logged).
 */
async function takeWorkspace(
  { deps, ownership }: ToolRunnerContext,
  home: ConversationRef,
  owner: WorkspaceOwner | undefined,
  asked: number,
  logger: Logger,
): Promise<{ readonly taken: boolean; readonly tookOver: boolean }> {
  if (owner?.runner !== deps.runnerId && !(await deps.runners.claim(home, deps.runnerId, owner)))
    return { taken: false, tookOver: false };
  ownership.confirmOwned(home, asked);
  const tookOver = owner !== undefined && owner.runner !== '' && owner.runner !== deps.runnerId;
  if (tookOver) logger.info({ previousOwner: owner.runner }, 'took over the workspace');
  return { taken: true, tookOver };
}

/**
 * Forwards the delivery to `peer`, the live runner that owns the workspace (`home`'s). The owner
 * answers once the batch is appended; if it takes longer, or dies, look again later.
 */
async function forwardWake(
  { deps, ownership }: ToolRunnerContext,
  delivery: Delivery,
  ref: ConversationRef,
  home: ConversationRef,
  peer: string,
  options: { readonly claim?: boolean } = {},
): Promise<HandleOutcome> {
  try {
    const forward = headers();
    forward.set(RunnerHeader.Tenant, ref.tenant);
    forward.set(RunnerHeader.Conversation, ref.conversation);
    forward.set(RunnerHeader.StreamSeq, String(delivery.streamSeq));
    if (options.claim) forward.set(RunnerHeader.Claim, '1');
    const traceparent = delivery.header(TRACEPARENT_HEADER);
    if (traceparent) forward.set(TRACEPARENT_HEADER, traceparent);
    const reply = await deps.nc.request(RunnerSubjects.wake(peer), delivery.message.data, {
      headers: forward,
      timeout: deps.forwardTimeoutMs ?? deps.runners.livenessMs * 2,
    });
    const answer = reply.json<{ ok: boolean; error?: string }>();
    return answer.ok ? { ack: true, outcome: 'forwarded' } : { ack: false, outcome: 'forward_failed', delayMs: 1_000 };
  } catch {
    // unanswered: it may have stopped; the next delivery reads who owns the workspace again
    ownership.forgetPeer(home);
    deps.runners.forget(peer);
    return { ack: false, outcome: 'forward_pending', delayMs: Math.ceil(deps.runners.livenessMs / 2) };
  }
}

/**
 * A wake-up forwarded by another runner, with the commit it was delivered: when that commit
 * directly follows what the cache holds, the batch starts without reading the log.
 */
export function executeForwarded(
  context: ToolRunnerContext,
  batches: BatchExecution,
  forwarded: Forwarded,
): Promise<void> {
  const attributes = {
    'flotilla.tenant': forwarded.ref.tenant,
    'flotilla.conversation': forwarded.ref.conversation,
    'flotilla.stream_seq': forwarded.streamSeq,
    'flotilla.forwarded': true,
  };
  return inSpan('tool_batch', { parent: forwarded.traceparent ?? '', attributes }, () =>
    runForwarded(context, batches, forwarded),
  );
}

async function runForwarded(context: ToolRunnerContext, batches: BatchExecution, forwarded: Forwarded): Promise<void> {
  const { deps } = context;
  const { ref, streamSeq, data } = forwarded;
  // Forwarded here because another runner read that this one owns the workspace, at a time this
  // runner does not know: its ownership is not noted from that (its own deliveries read it once).
  // Or, to claim, because this runner owns the conversation's partition and no live runner owns
  // the workspace: it takes it, unless another runner did first (the sender asks that one next).
  const tookOver = forwarded.claim ? await claimForwarded(context, ref) : false;
  const cached = deps.cache.peek(ref);
  if (!cached || cached.tail.streamSeq >= streamSeq || batches.busy(ref)) return batches.executeFor(ref, tookOver);
  const loaded = await deps.cache.load(ref, streamSeq, {
    subject: deps.log.filter(ref),
    seq: streamSeq,
    data,
  });
  return batches.executeFor(ref, tookOver, undefined, loaded);
}

/** Takes the workspace a claim was forwarded for; whether from a dead owner. Throws when another live runner owns it, or took it first. */
async function claimForwarded(context: ToolRunnerContext, home: ConversationRef): Promise<boolean> {
  const { deps, ownership } = context;
  if (ownership.ownsRecently(home)) return false;
  const asked = Date.now();
  const owner = await deps.runners.owner(home);
  if (owner?.runner && owner.runner !== deps.runnerId && (await deps.runners.aliveUntil(owner.runner)) !== undefined)
    throw new Error(`the workspace is owned by the live runner ${owner.runner}`);
  const taken = await takeWorkspace(context, home, owner, asked, deps.logger.child(home));
  if (!taken.taken) throw new Error('another runner claimed the workspace first');
  return taken.tookOver;
}
