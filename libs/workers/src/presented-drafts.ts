import type { EventDraft } from '@flotilla/events';

/** The draft with `present` applied to what a tool or a hook said: its content, details and error text, a hook's output, reason and added context. */
export function presentDraft(draft: EventDraft, present: (text: string) => string): EventDraft {
  const said = Object.fromEntries(
    (['content', 'details', 'error', 'extended_content', 'output', 'reason'] as const)
      .filter((field) => field in draft)
      .map((field) => [field, mapStrings((draft as Record<string, unknown>)[field], present)]),
  );
  return { ...draft, ...said } as EventDraft;
}

/** `value` with `map` applied to every string in it. */
export function mapStrings<T>(value: T, map: (text: string) => string): T {
  if (typeof value === 'string') return map(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => mapStrings(item, map)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, mapStrings(item, map)])) as T;
  }
  return value;
}
