import { join } from 'node:path';
import { HooksConfig, prepareDrafts, readWorkspaceContext, type PrepareNeeds } from '@flotilla/agent';
import { draftEvent, withPositionalIds, type EventDraft } from '@flotilla/events';
import { appendSurely, isConflict, type ConversationRef } from '@flotilla/log';
import type { CachedConversation } from '@flotilla/runtime';
import type { Sandbox } from '@flotilla/sandbox';
import { openWorkspace } from '@flotilla/tools';
import type { McpOwed } from './conversation-in-force.js';
import { runHook } from './hook-runner.js';
import { mapStrings, presentDraft } from './presented-drafts.js';
import type { ToolRunnerContext } from './tool-runner-context.js';
import { conversationKey as key } from './tool-runner-dependencies.js';

// What a step waits for that only the workspace's owner can append: the workspace read and the
// hooks run (a `prepare`), and the spec's MCP servers listed.

/**
 * Answers a `prepare`: reads what the workspace says (its repository context, skills and path
 * rules) and runs the hooks owed (in the sandbox), into the log in one commit, for the step that
 * waits for it. Returns the conversation as the append left it, if the cache
 * holds just that; undefined (read the log again) after a conflict: another commit landed first.
 */
export async function prepare(
  context: ToolRunnerContext,
  ref: ConversationRef,
  conversation: CachedConversation,
  needs: PrepareNeeds,
): Promise<CachedConversation | undefined> {
  const { deps, inForce, workspaces } = context;
  const { root } = await workspaces.directory(ref, inForce.home(ref, conversation.events), false);
  const hooks = inForce.hooksInForce(conversation.events);
  const hooksOwed = needs.sessionStart || needs.prompts.length > 0 || needs.stop || needs.sessionEnd;
  const answer = async (
    sandbox: Sandbox | undefined,
    secrets: Readonly<Record<string, string>>,
  ): Promise<EventDraft[]> => {
    const workspace = workspaces.get(ref) ?? (await openWorkspace(root));
    const drafts = await prepareDrafts({
      needs,
      events: conversation.events,
      hooks: hooks ?? HooksConfig.parse({}),
      ref,
      readContext: () => readWorkspaceContext(workspace),
      run: (hook, input) => runHook(hook, input, sandbox),
    });
    // a hook's output leaves this runner as any tool's does: host paths as the agent sees them, no secret's value
    const present = (text: string): string =>
      deps.mask ? deps.mask(workspace.show(text), secrets) : workspace.show(text);
    return drafts.map((draft) => presentDraft(draft, present));
  };
  let drafts: EventDraft[];
  if (!hooksOwed) drafts = await answer(undefined, {});
  else {
    // hooks run in the conversation's sandbox, with its secrets in their environment as its commands have
    const secrets = await inForce.secrets(ref, inForce.inForce(conversation.events).modelKey);
    const privateDir = join(deps.privateRoot, ref.tenant, ref.conversation);
    drafts = await deps.sandboxes.use(
      { id: key(ref), workspace: root, privateDir, env: secrets.sandbox },
      ({ sandbox }) => answer(sandbox, secrets.all),
    );
  }
  if (drafts.length === 0) return undefined;
  return await appendAtTail(context, ref, conversation, drafts);
}

/**
 * Starts the spec's MCP servers that have not listed (stdio ones in the conversation's sandbox)
 * and appends what each offers, or why it offers nothing, as one mcp_tools event per server, in
 * one commit. Returns the conversation as the append left it, if the cache holds just that;
 * undefined (read the log again) after a conflict.
 */
export async function listMcpServers(
  context: ToolRunnerContext,
  ref: ConversationRef,
  conversation: CachedConversation,
  owed: McpOwed,
): Promise<CachedConversation | undefined> {
  const { deps, inForce, workspaces, notes, mcp } = context;
  const { root } = await workspaces.directory(ref, inForce.home(ref, conversation.events), false);
  const revealed = await inForce.secrets(ref, inForce.inForce(conversation.events).modelKey);
  const secrets = revealed.all;
  const privateDir = join(deps.privateRoot, ref.tenant, ref.conversation);
  const drafts = await deps.sandboxes.use(
    { id: key(ref), workspace: root, privateDir, env: revealed.sandbox },
    async ({ sandbox, restarted }) => {
      if (restarted) notes.restarted(ref, restarted);
      const listings = await mcp.list({ id: key(ref), spec: owed.spec, sandbox, secrets }, owed.servers);
      // what leaves this runner shows no host path and no secret's value, whatever a server printed
      const present = (text: string): string => {
        const shown = text.replaceAll(root, sandbox.workspacePath);
        return deps.mask ? deps.mask(shown, secrets) : shown;
      };
      return listings.map((listing) => {
        return draftEvent(
          { ...ref, source: 'environment' },
          'mcp_tools',
          mapStrings(
            {
              spec_seq: owed.specSeq,
              server: listing.server,
              tools: [...listing.tools],
              ...('error' in listing ? { error: listing.error } : {}),
            },
            present,
          ),
        );
      });
    },
  );
  for (const draft of drafts) {
    if (draft.type === 'mcp_tools' && draft.error)
      deps.logger.warn(
        { conversation: ref.conversation, tenant: ref.tenant, server: draft.server, reason: draft.error.message },
        'an MCP server could not be started or listed',
      );
  }
  return await appendAtTail(context, ref, conversation, drafts);
}

/**
 * Appends `drafts` at the tail `conversation` was read at. Returns the conversation as the append
 * left it, if the cache holds just that; undefined (read the log again) after a conflict: another
 * commit landed first.
 */
async function appendAtTail(
  { deps }: ToolRunnerContext,
  ref: ConversationRef,
  conversation: CachedConversation,
  drafts: readonly EventDraft[],
): Promise<CachedConversation | undefined> {
  try {
    const commit = await appendSurely(deps.log, ref, withPositionalIds(drafts, conversation.tail.lastSeq + 1), {
      expected: conversation.tail,
    });
    deps.cache.appended(ref, conversation.tail, commit.events, {
      streamSeq: commit.streamSeq,
      lastSeq: commit.lastSeq,
    });
    deps.metrics.appends.inc({ result: 'ok' });
    const known = deps.cache.peek(ref);
    return known?.tail.streamSeq === commit.streamSeq ? known : undefined;
  } catch (error) {
    if (isConflict(error)) return undefined;
    throw error;
  }
}
