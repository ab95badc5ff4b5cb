import { EVENT_TYPES, isSubjectToken, SpecName, type EventType } from '@flotilla/events';
import type { OptionValues } from './cli-options.js';
import { usageError } from './errors.js';

/** `{ [key]: value }`, or `{}` when the value is undefined (an optional field left out, not set to undefined). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Throws unless `rest` holds exactly the arguments `expected` names (naming the first extra one, or what is missing). */
export function expectPositionals(name: string, rest: readonly string[], expected: readonly string[]): void {
  if (rest.length !== expected.length) {
    const extra = rest.slice(expected.length);
    throw usageError(
      extra.length > 0 ? `${name}: unexpected argument "${extra[0]}"` : `${name} needs ${expected.join(' ')}`,
    );
  }
}

/** The one conversation ID a command takes as its only argument. */
export function singleId(name: string, rest: readonly string[]): string {
  if (rest.length === 0) throw usageError(`${name} needs the conversation ID, e.g. flotilla ${name} my-conversation`);
  expectPositionals(name, rest, ['ID']);
  return conversationId(rest[0]!);
}

/** `value`, when it can be a conversation id (a subject token); `what` names it in the error. */
export function conversationId(value: string, what = 'ID'): string {
  if (!isSubjectToken(value))
    throw usageError(`${what} "${value}" is not a conversation id: 1-64 characters of A-Z a-z 0-9 _ -`);
  return value;
}

/** A template's or profile's name, as the operator's catalog spells them. */
export function specName(value: string, what: string): string {
  const parsed = SpecName.safeParse(value);
  if (!parsed.success)
    throw usageError(
      `${what} "${value}" is not a template or profile name: it ${parsed.error.issues[0]?.message ?? 'is not valid'}`,
    );
  return value;
}

/** `--after-seq N`: the seq of the last event already seen (0: from the start). */
export function afterSeqOf(values: OptionValues): number | undefined {
  return integer('--after-seq', values['after-seq'], 0, Number.MAX_SAFE_INTEGER);
}

/** An option's whole number from `min` to `max` (undefined when the option is not given). */
export function integer(option: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    throw usageError(`${option} must be a whole number from ${min} to ${max}, not "${value}"`);
  return number;
}

/** `--type a,b`: event types, each one the protocol knows. */
export function eventTypes(value: string): EventType[] {
  const types = value.split(',').map((type) => type.trim());
  for (const type of types) {
    if (!(EVENT_TYPES as readonly string[]).includes(type))
      throw usageError(`--type: unknown event type "${type}"; known types: ${EVENT_TYPES.join(', ')}`);
  }
  return types as EventType[];
}
