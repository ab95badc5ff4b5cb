import { OnBusy, type Event } from '@flotilla/events';
import type { ConversationRef, StoredCommit } from '@flotilla/log';
import { CURRENT_SNAPSHOT_VERSION, type ConversationSnapshot } from './conversation-snapshot.js';
import { copyState, foldState, initialState } from './conversation-state.js';
import { CommitOrderError, StateError, StateErrorCode } from './errors.js';
import { assertValidRef } from './snapshot-key.js';

/** The snapshot of a conversation with no events. */
export function initialSnapshot(ref: ConversationRef): ConversationSnapshot {
  assertValidRef(ref);
  return {
    v: CURRENT_SNAPSHOT_VERSION,
    tenant: ref.tenant,
    conversation: ref.conversation,
    ...initialState(),
    last_seq: 0,
    last_stream_seq: 0,
    commits: 0,
    created_at: null,
    updated_at: null,
    title: null,
    tags: [],
    settings_ref: null,
    counters: {
      events: 0,
      user_messages: 0,
      agent_messages: 0,
      actions: 0,
      observations: 0,
      agent_errors: 0,
      rejections: 0,
      condensations: 0,
      llm_calls: 0,
    },
    event_counts: {},
    usage: {
      prompt_tokens: 0,
      completion_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      cost_usd: 0,
    },
    last_error: null,
    final_response: null,
    agent_spec: null,
    forked_from: null,
    abandoned: [],
    run_started: null,
  };
}

/** True when the snapshot already reflects this commit (it is at or before the snapshot's position). */
export function isApplied(snapshot: ConversationSnapshot, commit: StoredCommit): boolean {
  return commit.streamSeq <= snapshot.last_stream_seq;
}

/**
 * Folds one commit into the snapshot and returns the new snapshot (the input is not changed).
 * Idempotent: a commit at or before `last_stream_seq` returns the snapshot as it is. A commit
 * that does not start at `last_seq + 1` throws a CommitOrderError: the snapshot would be wrong.
 */
export function applyCommit(snapshot: ConversationSnapshot, commit: StoredCommit): ConversationSnapshot {
  const where = `${snapshot.tenant}/${snapshot.conversation}`;
  if (commit.tenant !== snapshot.tenant || commit.conversation !== snapshot.conversation) {
    throw new StateError(
      StateErrorCode.WrongConversation,
      `${where}: commit #${commit.streamSeq} belongs to ${commit.tenant}/${commit.conversation}`,
    );
  }
  if (isApplied(snapshot, commit)) return snapshot;
  if (commit.firstSeq !== snapshot.last_seq + 1) {
    throw new CommitOrderError(snapshot.last_seq + 1, commit.firstSeq, commit.streamSeq, where);
  }
  assertContiguous(commit, where);
  const next: ConversationSnapshot = {
    ...copyState(snapshot),
    last_seq: commit.lastSeq,
    last_stream_seq: commit.streamSeq,
    commits: snapshot.commits + 1,
    tags: [...snapshot.tags],
    counters: { ...snapshot.counters },
    event_counts: copyCounts(snapshot.event_counts),
    usage: { ...snapshot.usage },
    last_error: snapshot.last_error && { ...snapshot.last_error },
    final_response: snapshot.final_response && { ...snapshot.final_response },
    agent_spec: snapshot.agent_spec && { ...snapshot.agent_spec },
    run_started: snapshot.run_started && { ...snapshot.run_started },
  };
  for (const event of commit.events) applyEvent(next, event, commit.streamSeq);
  return next;
}

/** Folds commits in order into `start` (e.g. `initialSnapshot(ref)`), skipping those already applied. */
export function foldCommits(start: ConversationSnapshot, commits: Iterable<StoredCommit>): ConversationSnapshot {
  let snapshot = start;
  for (const commit of commits) snapshot = applyCommit(snapshot, commit);
  return snapshot;
}

/** The tool whose message is the agent's final response (as libs/agent names it). */
const FINISH_TOOL = 'finish';

function assertContiguous(commit: StoredCommit, where: string): void {
  const count = commit.events.length;
  const contiguous =
    count > 0 &&
    commit.lastSeq === commit.firstSeq + count - 1 &&
    commit.events.every((event, index) => event.seq === commit.firstSeq + index);
  if (!contiguous) {
    throw new StateError(
      StateErrorCode.InvalidCommit,
      `${where}: commit #${commit.streamSeq} claims seqs ${commit.firstSeq}..${commit.lastSeq} but holds ${count} events ` +
        `with seqs ${commit.events.map((event) => event.seq).join(', ')}`,
    );
  }
}

function copyCounts(counts: ConversationSnapshot['event_counts']): ConversationSnapshot['event_counts'] {
  const copy: ConversationSnapshot['event_counts'] = {};
  for (const [type, bySource] of Object.entries(counts) as [
    keyof typeof counts,
    (typeof counts)[keyof typeof counts],
  ][])
    copy[type] = { ...bySource };
  return copy;
}

/** Mutates `snapshot` (a fresh copy owned by applyCommit) with one event of the commit at `streamSeq`. */
function applyEvent(snapshot: ConversationSnapshot, event: Event, streamSeq: number): void {
  const { counters, usage } = snapshot;
  counters.events += 1;
  const bySource = (snapshot.event_counts[event.type] ??= {});
  bySource[event.source] = (bySource[event.source] ?? 0) + 1;
  snapshot.created_at ??= event.timestamp;
  snapshot.updated_at = event.timestamp;
  const before = snapshot.status;
  foldState(snapshot, event);
  switch (event.type) {
    case 'message':
      if (event.role === 'assistant') {
        counters.agent_messages += 1;
        snapshot.final_response = { seq: event.seq, stream_seq: streamSeq };
      } else if (event.source === 'user') {
        counters.user_messages += 1;
        snapshot.final_response = null;
      }
      return;
    case 'action':
      counters.actions += 1;
      if (event.tool_name === FINISH_TOOL && typeof event.input?.['message'] === 'string')
        snapshot.final_response = { seq: event.seq, stream_seq: streamSeq };
      return;
    case 'observation':
      counters.observations += 1;
      return;
    case 'agent_error':
      counters.agent_errors += 1;
      return;
    case 'user_rejection':
      counters.rejections += 1;
      return;
    case 'condensation':
      counters.condensations += 1;
      return;
    case 'llm_usage':
      counters.llm_calls += 1;
      usage.prompt_tokens += event.prompt_tokens;
      usage.completion_tokens += event.completion_tokens;
      usage.cache_read_tokens += event.cache_read_tokens;
      usage.cache_write_tokens += event.cache_write_tokens;
      usage.reasoning_tokens += event.reasoning_tokens;
      usage.cost_usd += event.cost_usd;
      return;
    case 'state_change':
      // the status itself is folded by foldState
      if (event.status === 'running') snapshot.last_error = null;
      // a run begins from rest; an approval's running goes on with the run that asked for it
      if (event.status === 'running' && before !== 'running' && before !== 'waiting_for_confirmation')
        snapshot.run_started = { seq: event.seq, at: event.timestamp };
      if (event.title !== undefined) snapshot.title = event.title;
      if (event.tags !== undefined) snapshot.tags = [...event.tags];
      if (event.settings_ref !== undefined) snapshot.settings_ref = event.settings_ref;
      return;
    case 'conversation_error':
      snapshot.last_error = { code: event.code, detail: event.detail, seq: event.seq };
      return;
    case 'agent_spec': {
      const llm = event.spec['llm'];
      const model = typeof llm === 'object' && llm !== null ? (llm as { model?: unknown }).model : undefined;
      const onBusy = OnBusy.safeParse(event.spec['on_busy']);
      const retention = event.spec['retention'];
      const idle =
        typeof retention === 'object' && retention !== null
          ? (retention as { idle_seconds?: unknown }).idle_seconds
          : undefined;
      snapshot.agent_spec = {
        seq: event.seq,
        stream_seq: streamSeq,
        model: typeof model === 'string' ? model : null,
        template: event.template ?? null,
        on_busy: onBusy.success ? onBusy.data : null,
        retention_seconds: typeof idle === 'number' && Number.isSafeInteger(idle) && idle > 0 ? idle : null,
      };
      return;
    }
    case 'branch':
      // what the view held is forgotten; the copies that follow in the commit set the final response again
      snapshot.final_response = null;
      if (event.kind === 'fork') snapshot.forked_from = { ...event.from };
      else snapshot.abandoned = withAbandoned(snapshot.abandoned, event.from.seq + 1, event.seq - 1);
      return;
    case 'system_prompt':
    case 'approval':
    case 'execution_started':
    case 'condensation_request':
    case 'pause':
    case 'interrupt':
    case 'hook_execution':
    case 'secret_changed': // which secrets a conversation has lives in the secrets bucket, not in its snapshot
    case 'mcp_tools':
    case 'workspace_context':
    case 'subagent_started': // the child a delegation waits for is the pending action's started_by (foldState)
    case 'subagent_task':
    case 'workspace_file': // what is in the workspace is the workspace's; the event records who put it there
      return;
    default:
      assertNever(event);
  }
}

/** `ranges` with `first..last` abandoned too (nothing when the rewind leaves nothing behind), merged. */
function withAbandoned(
  ranges: ConversationSnapshot['abandoned'],
  first: number,
  last: number,
): ConversationSnapshot['abandoned'] {
  if (last < first) return ranges;
  const kept = ranges.filter((range) => range.last < first - 1);
  const joined = ranges.find((range) => range.last >= first - 1 && range.first < first);
  return [...kept, { first: joined ? joined.first : first, last }];
}

function assertNever(event: never): never {
  throw new StateError(
    StateErrorCode.InvalidCommit,
    `unknown event type ${(event as { type?: unknown }).type as string}`,
  );
}
