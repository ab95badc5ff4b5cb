import type { ContentPart } from '@flotilla/events';
import type { ViewItem } from '@flotilla/view';

/** Cuts a text to at most about `limit` characters, keeping its beginning and end. */
export function shorten(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const marker = (omitted: number): string => `\n… [${omitted} characters omitted] …\n`;
  const room = limit - marker(text.length).length;
  if (room < 40) return `${text.slice(0, Math.max(0, limit))}…`;
  const headLength = Math.ceil(room / 2);
  const tailLength = room - headLength;
  return `${text.slice(0, headLength)}${marker(text.length - room)}${text.slice(text.length - tailLength)}`;
}

/** Text as it is, an image as a mark naming it: a summary never carries an image's bytes. */
function partsText(parts: readonly ContentPart[]): string {
  return parts
    .map((part) => (part.type === 'text' ? part.text : part.name === undefined ? '[image]' : `[image ${part.name}]`))
    .join('\n');
}

/** One view item as plain text for the summarizer (summaries are handled apart). */
export function renderItem(item: ViewItem): string {
  switch (item.type) {
    case 'system_prompt':
      return `SYSTEM PROMPT: ${item.static_prompt}`;
    case 'condensation_summary':
      return `EARLIER SUMMARY: ${item.summary}`;
    case 'message': {
      const who = item.role === 'assistant' ? 'ASSISTANT' : item.source === 'user' ? 'USER' : 'ENVIRONMENT';
      const skills = item.activated_skills?.length ? ` [skills: ${item.activated_skills.join(', ')}]` : '';
      return `${who}${skills}: ${partsText(item.content)}`;
    }
    case 'action': {
      const thought = partsText(item.thought).trim();
      const lines = thought === '' ? [] : [`ASSISTANT: ${thought}`];
      const summary = item.summary === undefined ? '' : ` — ${item.summary}`;
      lines.push(`ASSISTANT called ${item.tool_name} (${item.tool_call_id})${summary}: ${item.arguments}`);
      return lines.join('\n');
    }
    case 'observation':
      return `RESULT of ${item.tool_name} (${item.tool_call_id})${item.is_error ? ' [error]' : ''}: ${partsText(item.content)}`;
    case 'agent_error':
      return item.tool_call_id === undefined
        ? `ERROR: ${item.error}`
        : `ERROR answering ${item.tool_name ?? 'a tool'} (${item.tool_call_id}): ${item.error}`;
    case 'user_rejection':
      return `REJECTED by the ${item.rejection_source} ${item.tool_name} (${item.tool_call_id}): ${item.reason}`;
  }
}
