import type { Conversation, ServerInfo } from '@flotilla/api';
import { clip, formatColumns } from './text.js';

/** `list`: one row per conversation (id, status, title, updated, events). */
export function renderConversationTable(conversations: readonly Conversation[], now: Date): string[] {
  if (conversations.length === 0) return ['no conversations'];
  const rows = conversations.map((conversation) => [
    conversation.id,
    conversation.status,
    clip(conversation.title ?? '-', 40),
    conversation.updated_at === null ? '-' : relativeTime(new Date(conversation.updated_at), now),
    String(conversation.counters.events),
  ]);
  return formatColumns([['ID', 'STATUS', 'TITLE', 'UPDATED', 'EVENTS'], ...rows]);
}

/** `get`: the conversation's fields, one per line. */
export function renderConversation(conversation: Conversation): string[] {
  const { counters, usage } = conversation;
  const lines = [
    `id:        ${conversation.id}`,
    `status:    ${conversation.status}`,
    `title:     ${conversation.title ?? '-'}`,
    `tags:      ${conversation.tags.length === 0 ? '-' : conversation.tags.join(', ')}`,
    `created:   ${conversation.created_at ?? '-'}`,
    `updated:   ${conversation.updated_at ?? '-'}`,
    `last seq:  ${conversation.last_seq}`,
    `events:    ${counters.events} (${counters.user_messages} user messages, ${counters.agent_messages} agent messages, ${counters.actions} actions, ` +
      `${counters.observations} observations, ${counters.agent_errors} agent errors, ${counters.rejections} rejections, ${counters.condensations} condensations)`,
    `llm:       ${counters.llm_calls} calls, ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens ` +
      `(${usage.cache_read_tokens} cache read, ${usage.reasoning_tokens} reasoning), $${usage.cost_usd.toFixed(4)}`,
  ];
  if (conversation.last_error)
    lines.push(
      `last error: ${conversation.last_error.code} at #${conversation.last_error.seq}: ${conversation.last_error.detail}`,
    );
  return lines;
}

/** `info`: what the gateway offers. */
export function renderServerInfo(info: ServerInfo): string[] {
  const on = Object.entries(info.capabilities)
    .filter(([, enabled]) => enabled)
    .map(([name]) => name);
  const { limits } = info;
  return [
    `${info.name} ${info.version} (api ${info.api_version}, protocol ${info.protocol_version}, instance ${info.instance})`,
    `tenant:       ${info.tenant}`,
    `capabilities: ${on.length === 0 ? '-' : on.join(', ')}`,
    `limits:       body ${limits.max_body_bytes} B, frame ${limits.max_frame_bytes} B, ${limits.max_subscribers_per_conversation} subscribers per conversation, ` +
      `running: ${limits.max_running === 0 ? 'no limit' : limits.max_running} (per tenant: ${limits.max_running_per_tenant === 0 ? 'no limit' : limits.max_running_per_tenant})`,
    `tools:`,
    ...formatColumns(info.tools.map((tool) => [`  ${tool.name}`, clip(tool.description.split('\n')[0] ?? '', 100)])),
    ...agentLines(info.agents),
  ];
}

/** The operator's agents: the default, the templates, the model profiles (each with its fallbacks), and whether a spec may bring its own model. */
function agentLines(agents: ServerInfo['agents']): string[] {
  const custom = agents.custom_models;
  return [
    `agent:        ${agents.default.model} (default), tools ${agents.default.tools.join(', ')}`,
    `models:       ${agents.profiles.map((profile) => `${profile.name} (${profile.provider} ${profile.model}${profile.fallbacks.length === 0 ? '' : `, then ${profile.fallbacks.join(', then ')}`})`).join(', ')}${custom === false ? '' : `; own models allowed at ${custom.base_urls.join(', ')}`}`,
    `mcp servers:  ${agents.mcp.commands.length + agents.mcp.url_prefixes.length === 0 ? 'none allowed' : [...agents.mcp.commands.map((command) => `command ${command}`), ...agents.mcp.url_prefixes.map((prefix) => `URLs ${prefix}…`)].join(', ')}`,
    ...(agents.templates.length === 0
      ? []
      : [
          'templates:',
          ...formatColumns(
            agents.templates.map((template) => [
              `  ${template.name}`,
              `${template.model}, tools ${template.tools.join(', ')}`,
            ]),
          ),
        ]),
    ...(agents.sub_agents.length === 0
      ? []
      : [
          'sub-agents:',
          ...formatColumns(
            agents.sub_agents.map((agent) => [
              `  ${agent.name}`,
              `${clip(agent.description, 80)} (${agent.model ?? "the parent's model"}, tools ${agent.tools.join(', ')}, ${agent.workspace} workspace)`,
            ]),
          ),
        ]),
  ];
}

/** `5s ago`, `3m ago`, `2h ago`, `4d ago`; older: the date. */
export function relativeTime(then: Date, now: Date): string {
  const seconds = Math.round((now.getTime() - then.getTime()) / 1000);
  if (seconds < 0) return then.toISOString().slice(0, 19).replace('T', ' ');
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)}h ago`;
  if (seconds < 30 * 86_400) return `${Math.floor(seconds / 86_400)}d ago`;
  return then.toISOString().slice(0, 10);
}
