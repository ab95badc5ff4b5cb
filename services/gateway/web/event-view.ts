import type { ActionEvent, ContentPart, Event, ObservationEvent } from '@flotilla/events';
import { append, h, type Child } from './dom.js';
import { clockTime, count, prettyJson, statusBadge } from './format.js';
import { editDiff, patchDiff } from './edit-diff.js';
import { markdown } from './markdown.js';

/** Results up to this many lines start expanded; longer ones start collapsed. */
const OPEN_RESULT_LINES = 24;

/** One durable event as a list item of the conversation's stream. */
export function renderEvent(event: Event): HTMLLIElement {
  const item = h('li', {
    class: `event event-${event.type} source-${event.source}`,
    'data-testid': 'event',
    'data-type': event.type,
    'data-seq': event.seq,
  });
  append(item, ...body(event));
  return item;
}

function body(event: Event): Child[] {
  switch (event.type) {
    case 'message': {
      const user = event.role === 'user';
      const who = user ? (event.source === 'user' ? 'You' : event.source === 'hook' ? 'Hook' : 'Environment') : 'Agent';
      // what a skill or a hook adds to the user's turn is in extended_content: shown too, under what activated it
      const skills = event.activated_skills?.length ? `Skills activated: ${event.activated_skills.join(', ')}` : null;
      return [
        meta(who, event),
        h(
          'div',
          {
            class: `bubble ${user ? 'bubble-user' : 'bubble-agent'}`,
            'data-testid': user ? 'user-message' : 'agent-message',
          },
          ...contentParts(event.content),
        ),
        event.extended_content?.length
          ? collapsible(
              skills ?? 'Added context',
              event.extended_content.map((part) => (part.type === 'text' ? part.text : '')).join('\n\n'),
              'extended-content',
            )
          : null,
        event.reasoning?.text ? collapsible('Reasoning', event.reasoning.text, 'reasoning') : null,
      ];
    }
    case 'action':
      return [meta('Tool call', event), actionCard(event)];
    case 'observation':
      return [meta('Result', event), observationCard(event)];
    case 'agent_error':
      return [
        meta(event.tool_name ? `Error · ${event.tool_name}` : 'Agent error', event),
        h('div', { class: 'card card-error' }, h('pre', { class: 'output' }, event.error)),
      ];
    case 'conversation_error':
      return [
        meta('Run stopped', event),
        h('div', { class: 'card card-error' }, h('strong', {}, event.code), h('p', {}, event.detail)),
      ];
    case 'user_rejection':
      return note(
        event,
        `Rejected ${event.tool_name}${event.rejection_source === 'hook' ? ' (by a hook)' : ''}`,
        event.reason ? `“${event.reason}”` : null,
        'note-warning',
      );
    case 'approval':
      return note(event, `Approved ${plural(event.action_ids.length, 'action')}`, null, 'note-success');
    case 'execution_started':
      return note(event, `Running ${plural(event.action_ids.length, 'action')}`, `on ${event.runner}`);
    case 'state_change':
      return stateChange(event);
    case 'pause':
      return note(event, 'Pause requested', event.reason ?? null);
    case 'interrupt':
      return note(event, 'Interrupted', event.reason ?? null, 'note-warning');
    case 'condensation':
      return [
        ...note(event, `Condensed history: ${plural(event.forgotten_event_ids.length, 'event')} summarised`, null),
        event.summary ? collapsible('Summary', event.summary, 'condensation-summary') : null,
      ];
    case 'condensation_request':
      return note(event, 'Condensation requested', event.reason ?? null);
    case 'hook_execution':
      return note(
        event,
        `Hook ${event.hook}: ${event.decision}`,
        `${event.command}${event.exit_code === null ? '' : ` (exit ${event.exit_code})`}`,
      );
    case 'secret_changed':
      return note(event, `Secret ${event.name} ${event.action === 'set' ? 'set' : 'removed'}`, null);
    case 'agent_spec':
      return note(
        event,
        `Agent spec: ${specSummary(event.spec)}`,
        event.template ? `${event.reason} (template ${event.template})` : event.reason,
      );
    case 'mcp_tools':
      return event.error
        ? note(event, `MCP server ${event.server} failed`, event.error.message, 'note-warning')
        : note(
            event,
            `MCP server ${event.server}: ${plural(event.tools.length, 'tool')}`,
            event.tools.map((tool) => tool.name).join(', ') || null,
          );
    case 'workspace_context':
      return note(
        event,
        `Workspace context: ${plural(event.repository.length, 'file')}, ${plural(event.knowledge.length + event.skills.length, 'skill')}, ${plural(event.rules.length, 'rule')}`,
        [
          ...event.repository.map((file) => file.path),
          ...event.knowledge.map((skill) => skill.path),
          ...event.skills.map((skill) => skill.path),
          ...event.rules.map((rule) => rule.path),
        ].join(', ') || null,
      );
    case 'subagent_started':
      return note(event, `Sub-agent ${event.agent} started`, `conversation ${event.child}`);
    case 'branch':
      return event.kind === 'fork'
        ? note(
            event,
            `Forked from ${event.from.conversation}`,
            `after event ${event.from.seq} · ${plural(event.copied, 'event')} of its view copied`,
          )
        : note(
            event,
            `Rewound to event ${event.from.seq}`,
            `events ${event.from.seq + 1}–${event.seq - 1} left the view${event.reason ? ` · ${event.reason}` : ''}`,
          );
    case 'workspace_file':
      return note(
        event,
        `${event.action === 'created' ? 'Uploaded' : 'Replaced'} ${event.path}`,
        `${count(event.size)} bytes · sha256 ${event.sha256.slice(0, 12)}…`,
      );
    case 'subagent_task':
      return note(
        event,
        `Sub-agent ${event.agent} of ${event.parent_call.conversation}`,
        `depth ${event.depth} · ${event.workspace === event.conversation ? 'its own workspace' : `the workspace of ${event.workspace}`}`,
      );
    case 'llm_usage':
      return note(
        event,
        `${event.model} · ${count(event.prompt_tokens)} in / ${count(event.completion_tokens)} out tokens`,
        `${(event.latency_ms / 1000).toFixed(1)} s${event.purpose === 'step' ? '' : ` · ${event.purpose}`}`,
        'note-usage',
      );
    case 'system_prompt':
      return [
        collapsible(
          `System prompt · ${plural(event.tools.length, 'tool')}: ${event.tools.map((tool) => tool.name).join(', ')}`,
          [event.static_prompt, event.dynamic_prompt].filter(Boolean).join('\n\n'),
          'system-prompt',
        ),
      ];
  }
}

function meta(label: string, event: Event): HTMLElement {
  return h('div', { class: 'event-meta' }, h('span', { class: 'event-label' }, label), when(event));
}

function note(event: Event, text: string, detail: string | null, tone = ''): Child[] {
  return [
    h(
      'div',
      { class: `note ${tone}` },
      h('span', { class: 'note-text' }, text),
      detail ? h('span', { class: 'note-detail' }, detail) : null,
      when(event),
    ),
  ];
}

/** Time and seq, at the right edge of every event. */
function when(event: Event): HTMLElement {
  return h(
    'span',
    { class: 'event-when' },
    h('time', { datetime: event.timestamp, title: event.timestamp }, clockTime(event.timestamp)),
    h('span', { class: 'event-seq' }, `#${event.seq}`),
  );
}

function stateChange(event: Extract<Event, { type: 'state_change' }>): Child[] {
  const parts: Child[] = [];
  if (event.status)
    parts.push(h('span', { class: 'note-text' }, 'Status'), statusBadge(event.status, 'state-change-status'));
  if (event.title !== undefined) parts.push(h('span', { class: 'note-text' }, `Title “${event.title}”`));
  if (event.tags !== undefined)
    parts.push(h('span', { class: 'note-text' }, `Tags: ${event.tags.join(', ') || 'none'}`));
  if (event.settings_ref !== undefined && parts.length === 0)
    parts.push(h('span', { class: 'note-text' }, `Settings ${event.settings_ref}`));
  if (event.reason) parts.push(h('span', { class: 'note-detail' }, event.reason));
  parts.push(when(event));
  return [h('div', { class: 'note note-status' }, ...parts)];
}

/** The tool call: its name, risk, the model's thought, and the command or arguments. */
export function actionCard(action: ActionEvent): HTMLElement {
  const thought = textOf(action.thought);
  return h(
    'div',
    { class: 'card card-action' },
    h(
      'div',
      { class: 'card-head' },
      h('span', { class: 'tool-name', 'data-testid': 'tool-name' }, action.tool_name),
      h(
        'span',
        { class: `risk risk-${action.security_risk}`, title: 'predicted security risk' },
        `risk: ${action.security_risk}`,
      ),
    ),
    action.summary ? h('p', { class: 'action-summary' }, action.summary) : null,
    thought ? markdown(thought, { class: 'markdown thought' }) : null,
    ...actionInput(action),
  );
}

function actionInput(action: ActionEvent): Child[] {
  const input = action.input;
  if (input === null) {
    return [
      h('p', { class: 'muted' }, 'The arguments could not be understood:'),
      h('pre', { class: 'code', 'data-testid': 'tool-arguments' }, action.arguments),
    ];
  }
  const { security_risk: _risk, summary: _summary, ...rest } = input;
  const text = (key: string): string | undefined => (typeof rest[key] === 'string' ? (rest[key] as string) : undefined);
  switch (action.tool_name) {
    case 'terminal': {
      const command = text('command') ?? '';
      const prefix = rest['is_input'] === true ? '⏎ ' : '$ ';
      return [
        h(
          'pre',
          { class: 'code command', 'data-testid': 'tool-command' },
          command === '' ? '(read more output)' : prefix + command,
        ),
      ];
    }
    case 'file_editor': {
      const parts: Child[] = [
        h(
          'pre',
          { class: 'code command', 'data-testid': 'tool-command' },
          `${text('command') ?? '?'} ${text('path') ?? ''}`,
        ),
      ];
      // the edit's change in place, as a diff: a replacement, an insertion, or a file written whole
      const command = text('command');
      if (command === 'insert' && text('new_str') !== undefined)
        parts.push(labelled(`insert after line ${String(rest['insert_line'])}`, editDiff('', text('new_str')!)));
      else if (text('old_str') !== undefined || text('new_str') !== undefined)
        parts.push(editDiff(text('old_str') ?? '', text('new_str') ?? ''));
      if (text('file_text') !== undefined) parts.push(labelled('content', editDiff('', text('file_text')!)));
      return parts;
    }
    case 'apply_patch': {
      const patch = text('patch');
      return patch === undefined
        ? [h('pre', { class: 'code', 'data-testid': 'tool-arguments' }, prettyJson(rest))]
        : [patchDiff(patch)];
    }
    case 'think': {
      const thought = text('thought');
      return [
        thought === undefined
          ? h('pre', { class: 'code', 'data-testid': 'tool-arguments' }, prettyJson(rest))
          : markdown(thought, { class: 'markdown thought', 'data-testid': 'tool-arguments' }),
      ];
    }
    case 'finish': {
      const message = text('message');
      return [
        message === undefined
          ? h('pre', { class: 'code', 'data-testid': 'tool-arguments' }, prettyJson(rest))
          : markdown(message, { 'data-testid': 'tool-arguments' }),
      ];
    }
    default:
      return Object.keys(rest).length === 0
        ? []
        : [h('pre', { class: 'code', 'data-testid': 'tool-arguments' }, prettyJson(rest))];
  }
}

function labelled(label: string, body: HTMLElement): HTMLElement {
  return h('div', { class: 'labelled' }, h('span', { class: 'label' }, label), body);
}

function observationCard(observation: ObservationEvent): HTMLElement {
  const output = textOf(observation.content);
  const exitCode = observation.details?.['exit_code'];
  const failed = observation.is_error || (typeof exitCode === 'number' && exitCode !== 0);
  const lines = output.split('\n').length;
  const result = h(
    'details',
    {
      class: `card card-result${failed ? ' card-error' : ''}`,
      'data-testid': 'tool-result',
      'data-error': String(failed),
      open: lines <= OPEN_RESULT_LINES,
    },
    h(
      'summary',
      {},
      h('span', { class: 'tool-name' }, observation.tool_name),
      typeof exitCode === 'number'
        ? h(
            'span',
            { class: `exit ${exitCode === 0 ? 'exit-ok' : 'exit-failed'}`, 'data-testid': 'exit-code' },
            `exit ${exitCode}`,
          )
        : null,
      observation.is_error ? h('span', { class: 'exit exit-failed' }, 'error') : null,
      h('span', { class: 'muted' }, output === '' ? 'no output' : plural(lines, 'line')),
    ),
    h('pre', { class: 'output' }, output === '' ? '(no output)' : output),
    ...images(observation.content),
  );
  return result;
}

function contentParts(parts: readonly ContentPart[]): Child[] {
  const text = textOf(parts);
  return [text === '' ? null : markdown(text, { class: 'markdown text' }), ...images(parts)];
}

function images(parts: readonly ContentPart[]): Child[] {
  return parts.flatMap((part): Child[] => {
    if (part.type !== 'image') return [];
    if (part.data !== undefined)
      return [
        h('img', {
          class: 'inline-image',
          alt: 'image',
          src: `data:${part.media_type ?? 'image/png'};base64,${part.data}`,
        }),
      ];
    if (part.url?.startsWith('data:image/')) return [h('img', { class: 'inline-image', alt: 'image', src: part.url })];
    // a stored image: the log names it, its bytes go only to the model
    if (part.sha256 !== undefined)
      return [
        h(
          'span',
          { class: 'image-ref', 'data-testid': 'image-ref' },
          `image${part.name === undefined ? '' : ` ${part.name}`} (${Math.max(1, Math.round((part.bytes ?? 0) / 1024))} KiB)`,
        ),
      ];
    return [h('a', { href: part.url ?? '#', target: '_blank', rel: 'noreferrer noopener' }, 'image')];
  });
}

function collapsible(title: string, text: string, className: string): HTMLElement {
  return h(
    'details',
    { class: `collapsible ${className}` },
    h('summary', {}, title),
    h('pre', { class: 'output' }, text),
  );
}

export function textOf(parts: readonly ContentPart[]): string {
  return parts
    .filter((part): part is Extract<ContentPart, { type: 'text' }> => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

function plural(amount: number, noun: string): string {
  return `${amount} ${noun}${amount === 1 ? '' : 's'}`;
}

/** The model and tools of a spec, as one line. */
function specSummary(spec: Record<string, unknown>): string {
  const llm = (spec['llm'] ?? {}) as { provider?: unknown; model?: unknown };
  const tools = Array.isArray(spec['tools']) ? spec['tools'].join(', ') : '';
  return `${String(llm.provider ?? '?')} ${String(llm.model ?? '?')}${tools ? `; tools ${tools}` : ''}`;
}
