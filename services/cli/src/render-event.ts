import type { ActionEvent, ContentPart, Event, ObservationEvent } from '@flotilla/events';
import { createStyle, type Style } from './style.js';
import { clip, indentBlock, limitLines } from './text.js';

export type RenderOptions = {
  /** ANSI colours (errors red, …). Default off. */
  readonly color?: boolean;
  /** The text of an agent message (or an action's thought) was already shown as streamed deltas. */
  readonly omitText?: boolean;
  /** Also show bookkeeping: the system prompt, execution starts, LLM usage, settings changes. */
  readonly verbose?: boolean;
  /** Prefix each event with its `#seq`. */
  readonly seq?: boolean;
  /** Lines of a tool result to show. Default 4. */
  readonly resultLines?: number;
  /** Lines of a user message to show. Default 12. */
  readonly userLines?: number;
  /** Longest line shown. Default 200. */
  readonly maxLineChars?: number;
};

type Context = { readonly style: Style; readonly options: RenderOptions; readonly width: number };

/**
 * One event as a few readable lines (no trailing newlines). Pure: the same event and options
 * always give the same lines. Bookkeeping events give no line unless `verbose`.
 */
export function renderEvent(event: Event, options: RenderOptions = {}): string[] {
  const context: Context = { style: createStyle(options.color ?? false), options, width: options.maxLineChars ?? 200 };
  const lines = linesOf(event, context);
  if (options.seq && lines.length > 0) lines[0] = `${context.style.dim(`#${event.seq}`)} ${lines[0]}`;
  return lines;
}

/** What a speaker's lines start with: `agent: `, `user: `, … */
export function speakerPrefix(source: Event['source'], color = false): string {
  const style = createStyle(color);
  const label = `${source}:`;
  return `${source === 'agent' ? style.cyan(style.bold(label)) : style.bold(label)} `;
}

/** The text of message content; images as `[image]`, or `[image <name>]` for one sent with its file name. */
export function contentText(parts: readonly ContentPart[]): string {
  return parts
    .map((part) => (part.type === 'text' ? part.text : part.name === undefined ? '[image]' : `[image ${part.name}]`))
    .join('\n');
}

function linesOf(event: Event, context: Context): string[] {
  const { style, options } = context;
  const verbose = options.verbose ?? false;
  switch (event.type) {
    case 'system_prompt':
      return verbose
        ? [
            style.dim(
              `· system prompt, ${event.tools.length} tool(s): ${event.tools.map((tool) => tool.name).join(', ')}`,
            ),
          ]
        : [];
    case 'message': {
      if (options.omitText && event.source === 'agent') return [];
      // what a skill or a hook adds to the user's turn (extended_content) is shown with it
      const text = [
        contentText(event.content),
        ...(event.activated_skills?.length ? [`[skills activated: ${event.activated_skills.join(', ')}]`] : []),
        ...(event.extended_content ? [contentText(event.extended_content)] : []),
      ]
        .filter(Boolean)
        .join('\n');
      const shown = event.source === 'agent' ? text : limitLines(text.split('\n'), options.userLines ?? 12).join('\n');
      return indentBlock(speakerPrefix(event.source, options.color), shown, `${event.source}: `.length);
    }
    case 'action':
      return actionLines(event, context);
    case 'observation':
      return observationLines(event, context);
    case 'agent_error': {
      const head = event.tool_name === undefined ? '✗ agent error: ' : `  ✗ ${event.tool_name} failed: `;
      const body = limitLines(event.error.split('\n'), options.resultLines ?? 4).map((line) =>
        clip(line, context.width),
      );
      return indentBlock(head, body.join('\n'), head.length).map((line) => style.red(line));
    }
    case 'user_rejection':
      return [
        style.yellow(
          `  ✗ rejected ${event.tool_name}${event.rejection_source === 'hook' ? ' (by a hook)' : ''}: ${clip(event.reason, context.width)}`,
        ),
      ];
    case 'approval':
      return [style.green(`✓ approved ${plural(event.action_ids.length, 'action')}`)];
    case 'execution_started':
      return verbose ? [style.dim(`· running ${plural(event.action_ids.length, 'action')} on ${event.runner}`)] : [];
    case 'condensation':
      return [
        style.dim(
          `· condensed: ${plural(event.forgotten_event_ids.length, 'event')} forgotten${event.summary === undefined ? '' : ', summarised'}`,
        ),
      ];
    case 'condensation_request':
      return [style.dim(`· condensation requested${reasonOf(event.reason)}`)];
    case 'state_change':
      return stateLines(event, context);
    case 'conversation_error':
      return [style.red(`✗ ${event.code}: ${clip(event.detail, context.width)}`)];
    case 'pause':
      return [style.yellow(`‖ pause requested${reasonOf(event.reason)}`)];
    case 'interrupt':
      return [style.yellow(`‖ interrupt${reasonOf(event.reason)}`)];
    case 'hook_execution': {
      const line = `· ${event.hook} hook: ${event.decision}${event.exit_code === null ? '' : ` (exit ${event.exit_code})`} — ${clip(event.command, 80)}`;
      return [event.decision === 'deny' ? style.yellow(line) : style.dim(line)];
    }
    case 'secret_changed':
      // the log never holds a secret's value; neither does anything shown of it
      return [style.dim(`· secret ${event.name} ${event.action === 'set' ? 'set' : 'removed'}`)];
    case 'agent_spec': {
      const llm = (event.spec['llm'] ?? {}) as { provider?: unknown; model?: unknown };
      return [
        style.dim(
          `· agent spec: ${String(llm.provider ?? '?')} ${String(llm.model ?? '?')} (${event.reason}${event.template ? `, template ${event.template}` : ''})`,
        ),
      ];
    }
    case 'mcp_tools':
      return event.error
        ? [style.red(`✗ MCP server ${event.server}: ${clip(event.error.message, context.width)}`)]
        : [
            style.dim(
              `· MCP server ${event.server}: ${event.tools.length} tool${event.tools.length === 1 ? '' : 's'}${event.tools.length > 0 ? ` (${clip(event.tools.map((tool) => tool.name).join(', '), 100)})` : ''}`,
            ),
          ];
    case 'workspace_context':
      return [style.dim(`· workspace context: ${workspaceContextSummary(event)}`)];
    case 'subagent_started':
      return [style.dim(`· sub-agent ${event.agent} started: conversation ${event.child}`)];
    case 'branch':
      return [
        style.dim(
          event.kind === 'fork'
            ? `· forked from ${event.from.conversation} after event ${event.from.seq} (${event.copied} events of its view copied)`
            : `· rewound to event ${event.from.seq}: events ${event.from.seq + 1}–${event.seq - 1} left the view${event.reason ? ` (${event.reason})` : ''}`,
        ),
      ];
    case 'workspace_file':
      return [
        style.dim(
          `· file ${event.action === 'created' ? 'uploaded' : 'replaced'}: ${event.path} (${event.size} bytes)`,
        ),
      ];
    case 'subagent_task':
      return [
        style.dim(
          `· sub-agent ${event.agent} of conversation ${event.parent_call.conversation} (depth ${event.depth}${event.workspace === event.conversation ? ', its own workspace' : `, in ${event.workspace}'s workspace`})`,
        ),
      ];
    case 'llm_usage':
      return verbose
        ? [
            style.dim(
              `· ${event.model} (${event.purpose}${event.fallback === undefined ? '' : `, by fallback ${event.fallback.profile ?? event.fallback.index}`}): ${event.prompt_tokens} in, ${event.completion_tokens} out, ${Math.round(event.latency_ms)} ms, $${event.cost_usd.toFixed(4)}`,
            ),
          ]
        : [];
  }
}

function actionLines(event: ActionEvent, context: Context): string[] {
  const { style, options } = context;
  const lines: string[] = [];
  const thought = contentText(event.thought).trim();
  if (thought !== '' && !options.omitText)
    lines.push(...indentBlock(speakerPrefix('agent', options.color), thought, 'agent: '.length));
  const risk =
    event.security_risk === 'high' || event.security_risk === 'medium'
      ? ` ${style.yellow(`[${event.security_risk} risk]`)}`
      : '';
  const summary = summariseArguments(event, context.width);
  const head = `${style.bold(`▶ ${event.tool_name}`)}${summary === '' ? '' : `: ${summary.split('\n')[0]}`}`;
  lines.push(`${head}${risk}`);
  // a finish message is the agent's answer: show all of it
  for (const line of summary.split('\n').slice(1)) lines.push(`  ${line}`);
  return lines;
}

/** The arguments that say what a call does, e.g. the command of a terminal call; others as `key=value`. */
const PRIMARY: Readonly<Record<string, readonly string[]>> = {
  terminal: ['command'],
  file_editor: ['command', 'path'],
  think: ['thought'],
  grep: ['pattern', 'path'],
  glob: ['pattern', 'path'],
};
const NOISE = new Set(['security_risk', 'summary']);

/** A one-line summary of an action's arguments (the finish tool's message is kept whole). */
export function summariseArguments(event: ActionEvent, width = 200): string {
  const input = event.input;
  if (input === null) return clip(oneLine(event.arguments), width);
  if (event.tool_name === 'finish' && typeof input['message'] === 'string') return input['message'];
  const primary = (PRIMARY[event.tool_name] ?? []).filter((key) => input[key] !== undefined && input[key] !== null);
  if (primary.length > 0) {
    const text = primary
      .map((key) => (typeof input[key] === 'string' ? firstLine(input[key]) : JSON.stringify(input[key])))
      .join(' ');
    return clip(`${event.tool_name === 'terminal' && input['is_input'] === true ? '(input) ' : ''}${text}`, width);
  }
  const pairs = Object.entries(input)
    .filter(([key]) => !NOISE.has(key))
    .map(([key, value]) => `${key}=${clip(oneLine(JSON.stringify(value) ?? 'undefined'), 60)}`);
  return clip(pairs.join(', '), width);
}

/** Terminal bookkeeping lines the header already says (exit code) or that are noise here (cwd). */
const TERMINAL_NOISE = [/^\[The command completed with exit code .*\]$/, /^\[Current working directory: .*\]$/];

function observationLines(event: ObservationEvent, context: Context): string[] {
  const { style, options } = context;
  const details = event.details ?? {};
  const exitCode = typeof details['exit_code'] === 'number' ? details['exit_code'] : undefined;
  const failed = event.is_error || (exitCode !== undefined && exitCode !== 0);
  const facts = [event.tool_name];
  if (exitCode !== undefined) facts.push(`exit ${exitCode}`);
  if (details['timed_out'] === true) facts.push('timed out');
  else if (details['still_running'] === true) facts.push('still running');
  const head = `  ${failed ? '✗' : '✓'} ${facts.join(' · ')}`;
  let output = contentText(event.content).split('\n');
  if (event.tool_name === 'terminal')
    output = output.filter((line) => !TERMINAL_NOISE.some((pattern) => pattern.test(line)));
  while (output.length > 0 && output[output.length - 1]!.trim() === '') output.pop();
  while (output.length > 0 && output[0]!.trim() === '') output.shift();
  const body = limitLines(output, options.resultLines ?? 4).map((line) => `    │ ${clip(line, context.width)}`);
  return failed
    ? [style.red(head), ...body.map((line) => style.red(line))]
    : [style.green(head), ...body.map((line) => style.dim(line))];
}

function stateLines(event: Extract<Event, { type: 'state_change' }>, context: Context): string[] {
  const { style, options } = context;
  const lines: string[] = [];
  if (event.status !== undefined) {
    const text = `● ${event.status.replaceAll('_', ' ')}${reasonOf(event.reason)}`;
    const colours: Partial<Record<string, (text: string) => string>> = {
      finished: style.green,
      error: style.red,
      stuck: style.red,
      waiting_for_confirmation: style.yellow,
      paused: style.yellow,
    };
    const paint = colours[event.status];
    lines.push(paint ? paint(text) : style.bold(text));
  }
  if (event.title !== undefined) lines.push(`● title: ${event.title}`);
  if (event.tags !== undefined) lines.push(`● tags: ${event.tags.length === 0 ? '(none)' : event.tags.join(', ')}`);
  if (event.settings_ref !== undefined && options.verbose) lines.push(style.dim(`· settings ${event.settings_ref}`));
  return lines;
}

/** The actions awaiting confirmation, and how to answer them. */
export function renderPendingActions(
  id: string,
  actions: readonly ActionEvent[],
  options: RenderOptions = {},
): string[] {
  const style = createStyle(options.color ?? false);
  const width = options.maxLineChars ?? 200;
  const lines = [style.yellow(`? ${plural(actions.length, 'action')} awaiting confirmation:`)];
  for (const action of actions) {
    const summary = summariseArguments(action, width).split('\n')[0] ?? '';
    lines.push(`  ▶ ${action.tool_name}${summary === '' ? '' : `: ${summary}`} [${action.security_risk} risk]`);
  }
  lines.push(`  approve: flotilla approve ${id}`);
  lines.push(`  reject:  flotilla reject ${id} --reason "…"`);
  return lines;
}

function reasonOf(reason: string | undefined): string {
  return reason === undefined || reason === '' ? '' : ` (${reason})`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function firstLine(text: string): string {
  const lines = text.split('\n');
  return lines.length > 1 ? `${lines[0]} …` : text;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/** What a workspace_context holds, in one line: its files, skills and rules by name. */
function workspaceContextSummary(event: Extract<Event, { type: 'workspace_context' }>): string {
  const parts = [
    ...(event.repository.length > 0 ? [event.repository.map((file) => file.path).join(', ')] : []),
    ...(event.knowledge.length > 0
      ? [`knowledge skills ${event.knowledge.map((skill) => skill.name).join(', ')}`]
      : []),
    ...(event.skills.length > 0 ? [`skills ${event.skills.map((skill) => skill.name).join(', ')}`] : []),
    ...(event.rules.length > 0 ? [`rules for ${event.rules.map((rule) => rule.folder).join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join('; ') : 'none found';
}
