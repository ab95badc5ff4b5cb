import {
  draftEvent,
  type DraftContext,
  type Event,
  type EventDraft,
  type KnowledgeSkill,
  type MessageEvent,
} from '@flotilla/events';
import type { SkillsFold } from './skills-fold.js';

/**
 * The knowledge skills that the user's messages since the agent last acted trigger (a trigger
 * found in a message's text, case-insensitively, as OpenHands matches them), each once per
 * conversation: an `environment` message, right after those messages, whose `extended_content`
 * holds each skill's text and whose `activated_skills` names them. The step appends it in its
 * commit and the model reads it as part of the user's turn; undefined when none is triggered.
 */
export function skillActivationDraft(
  events: readonly Event[],
  skills: SkillsFold,
  context: DraftContext,
): EventDraft | undefined {
  const catalog = skills.context?.knowledge ?? [];
  if (catalog.length === 0) return undefined;
  const texts = unansweredUserTexts(events).map((text) => text.toLowerCase());
  if (texts.length === 0) return undefined;
  const triggered: { readonly skill: KnowledgeSkill; readonly trigger: string }[] = [];
  for (const skill of catalog) {
    if (skills.activated.has(skill.name) || triggered.some((entry) => entry.skill.name === skill.name)) continue;
    const trigger = skill.triggers.find((candidate) => texts.some((text) => text.includes(candidate.toLowerCase())));
    if (trigger !== undefined) triggered.push({ skill, trigger });
  }
  if (triggered.length === 0) return undefined;
  return draftEvent({ ...context, source: 'environment' }, 'message', {
    role: 'user',
    content: [],
    extended_content: triggered.map(({ skill, trigger }) => ({
      type: 'text' as const,
      text: skillText(skill, trigger),
    })),
    activated_skills: triggered.map(({ skill }) => skill.name),
  });
}

function skillText(skill: KnowledgeSkill, trigger: string): string {
  return (
    `<EXTRA_INFO>\nThe following information has been included based on a keyword match for "${trigger}" (the skill ${skill.name}, from ${skill.path}). ` +
    `It may or may not be relevant to the user's request.\n\n${skill.content}${skill.truncated ? '\n[…the rest of the file was cut]' : ''}\n</EXTRA_INFO>`
  );
}

/** The text of the user's messages after the agent's last event (what the next step answers), oldest first. */
function unansweredUserTexts(events: readonly Event[]): string[] {
  const texts: string[] = [];
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.source === 'agent') break;
    if (isUserMessage(event))
      texts.unshift(event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n'));
  }
  return texts;
}

function isUserMessage(event: Event): event is MessageEvent {
  return event.type === 'message' && event.source === 'user' && event.role === 'user';
}
