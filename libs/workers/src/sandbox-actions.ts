import { join } from 'node:path';
import {
  actionPaths,
  executeActions,
  withPathRules,
  withToolHooks,
  workspaceRelative,
  type AroundAction,
} from '@flotilla/agent';
import { draftEvent, type ActionEvent as LoggedAction, type Event, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { formatBytes, workspaceUsage } from '@flotilla/sandbox';
import { createToolContext } from '@flotilla/tools';
import { inSpan, markFailed, tracingEnabled } from '@flotilla/tracing';
import type { InForce } from './conversation-in-force.js';
import { runHook } from './hook-runner.js';
import { presentDraft } from './presented-drafts.js';
import type { ToolRunnerContext } from './tool-runner-context.js';
import { conversationKey as key } from './tool-runner-dependencies.js';
import { addNotes } from './workspace-notes.js';

/**
 * Runs a batch of actions recorded as started, in the conversation's sandbox, and returns their
 * observations as drafts to append. Never throws for the sandbox's failure: the actions then get
 * an observation saying so.
 */
export async function runActions(
  context: ToolRunnerContext,
  ref: ConversationRef,
  actions: readonly Extract<Event, { type: 'action' }>[],
  note: boolean,
  inForce: InForce,
): Promise<EventDraft[]> {
  try {
    return await runInSandbox(context, ref, actions, note, inForce);
  } catch (error) {
    // the actions were recorded as started: they get an answer, never a silent retry
    context.deps.logger.error(
      { err: error, conversation: ref.conversation, tenant: ref.tenant },
      'the conversation’s sandbox could not run its actions',
    );
    const reason = `The conversation's sandbox could not run this action: ${(error as Error).message}. It may not have run at all; check before trying again, and tell the user if it keeps failing.`;
    return actions.map((action) =>
      draftEvent({ ...ref, source: 'environment', parent: action.id }, 'observation', {
        action_id: action.id,
        tool_call_id: action.tool_call_id,
        tool_name: action.tool_name,
        content: [{ type: 'text', text: reason }],
        is_error: true,
      }),
    );
  }
}

async function runInSandbox(
  context: ToolRunnerContext,
  ref: ConversationRef,
  actions: readonly Extract<Event, { type: 'action' }>[],
  note: boolean,
  inForce: InForce,
): Promise<EventDraft[]> {
  const { deps, workspaces, notes } = context;
  const { skills, mcp, hooks } = inForce;
  // a workspace request took the workspace over since the last batch: told now, as if this batch had
  const untold = notes.takeTakeOver(ref);
  const tookOver = note || untold !== undefined;
  const { root, existed: existsNow } = await workspaces.directory(ref, inForce.home ?? ref, tookOver);
  const existed = untold ?? existsNow;
  const revealed = await context.inForce.secrets(ref, inForce.modelKey);
  const secrets = revealed.all;
  const tracked = deps.interrupts.track(ref);
  const started = performance.now();
  try {
    const privateDir = join(deps.privateRoot, ref.tenant, ref.conversation);
    return await deps.sandboxes.use(
      { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
      async ({ sandbox, restarted: restartedNow }) => {
        const restartedBefore = notes.takeRestart(ref);
        const restarted = restartedNow ?? restartedBefore;
        const workspace = await workspaces.open(ref, root, sandbox);
        // read-only tools cannot fill the workspace: a batch of only those needs no filesystem made for it, nor a walk of it after
        const mayWrite = actions.some((action) => deps.tools.get(action.tool_name)?.annotations.readOnly !== true);
        if (mayWrite) await sandbox.prepareWorkspace?.();
        // a workspace of its own filesystem refuses a write past its quota itself: nothing to measure from outside
        const checkedQuota = sandbox.diskLimited ? undefined : deps.workspaceQuotaBytes;
        const toolContext = createToolContext({
          workspace,
          sandbox,
          conversationId: key(ref),
          signal: tracked.signal,
          ...(checkedQuota === undefined ? {} : { workspaceQuotaBytes: checkedQuota }),
          // outputs too long for an observation are saved to the private directory: masked first
          ...(deps.mask && Object.keys(secrets).length > 0
            ? { redact: (text: string) => deps.mask!(text, secrets) }
            : {}),
        });
        // a call of an MCP tool goes through the conversation's server, started first if it is not running
        const calledMcp = mcp !== undefined && actions.some((action) => deps.tools.get(action.tool_name) === undefined);
        const registry = calledMcp
          ? await context.mcp.registry({ id: key(ref), spec: mcp.spec, sandbox, secrets }, mcp.listed)
          : deps.tools;
        // between the spec's PreToolUse and PostToolUse hooks, which run in the same sandbox
        const execute = (allowed: readonly LoggedAction[]) =>
          executeActions(
            allowed,
            registry,
            toolContext,
            { ...ref, source: 'environment' },
            tracingEnabled() ? toolSpan : undefined,
          );
        const executed = hooks
          ? await withToolHooks(actions, hooks, ref, (hook, input) => runHook(hook, input, sandbox), execute)
          : await execute(actions);
        // a nested AGENTS.md joins the first observation of an action touching its folder
        const roots = [workspace.shownRoot, workspace.root];
        const drafts = withPathRules(actions, executed, skills, (action) =>
          actionPaths(action).flatMap((path) => workspaceRelative(path, roots) ?? []),
        );
        deps.metrics.toolSeconds.observe(
          { tool: actions.length === 1 ? actions[0]!.tool_name : 'batch', outcome: 'ok' },
          (performance.now() - started) / 1_000,
        );
        addNotes(drafts, { tookOver, existed, restarted });
        if (mayWrite && checkedQuota !== undefined) await checkQuota(context, root, drafts);
        // what leaves this runner shows host paths as the agent sees them, and no secret's value
        const present = (text: string): string => {
          const shown = workspace.show(text);
          return deps.mask ? deps.mask(shown, secrets) : shown;
        };
        return drafts.map((draft) => presentDraft(draft, present));
      },
    );
  } finally {
    tracked.done();
  }
}

/** A workspace over its quota after a batch: the last observation says so, as an error. */
async function checkQuota({ deps }: ToolRunnerContext, root: string, drafts: EventDraft[]): Promise<void> {
  const quota = deps.workspaceQuotaBytes;
  if (quota === undefined) return;
  const usage = await workspaceUsage(root, { stopAboveBytes: quota });
  if (usage.bytes <= quota) return;
  const index = drafts.findLastIndex((draft) => draft.type === 'observation');
  const last = drafts[index];
  if (last?.type !== 'observation') return;
  const text = `[The workspace is over its size quota of ${formatBytes(quota)} (at least ${formatBytes(usage.bytes)} used): delete files before writing more; commands that write will be stopped.]`;
  drafts[index] = { ...last, is_error: true, content: [...last.content, { type: 'text', text }] };
}

/** One tool call, as a span (a child of its batch's). */
const toolSpan: AroundAction = (action, run) =>
  inSpan(
    `tool ${action.tool_name}`,
    {
      attributes: {
        'flotilla.tool': action.tool_name,
        'flotilla.action_id': action.id,
        'flotilla.tool_call_id': action.tool_call_id,
      },
    },
    async (span) => {
      const result = await run();
      if (result.isError) markFailed(span, 'the tool reported an error');
      return result;
    },
  );
