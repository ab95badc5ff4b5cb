import { conversationId, optional, singleId, specName } from './arg-values.js';
import type { OptionValues } from './cli-options.js';
import { usageError } from './errors.js';

const PATH = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$/;

/**
 * Spec fields from `--set PATH=VALUE` settings: `llm.profile=fast` gives `{ llm: { profile: 'fast' } }`.
 * A value that is JSON (`0.2`, `true`, `["terminal","finish"]`, `{"mode":"always"}`) is that value;
 * any other is a string. As in the API, each top-level field given replaces the current one whole
 * (an llm of tuning only tunes the model in force: docs/api.md, "Agent specs").
 */
export function specFieldsOf(settings: readonly string[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const setting of settings) {
    const equals = setting.indexOf('=');
    const path = equals < 0 ? setting : setting.slice(0, equals);
    if (equals < 0 || !PATH.test(path))
      throw usageError(
        `--set takes PATH=VALUE with a dotted PATH of spec fields, e.g. --set llm.profile=fast, not "${setting}"`,
      );
    const keys = path.split('.');
    let target = fields;
    for (const key of keys.slice(0, -1)) {
      const next = target[key];
      if (next !== undefined && (typeof next !== 'object' || next === null || Array.isArray(next)))
        throw usageError(`--set ${path}: ${key} is already set to a value`);
      target = (next as Record<string, unknown> | undefined) ?? (target[key] = {});
    }
    const last = keys.at(-1)!;
    if (last in target) throw usageError(`--set ${path} is given twice (or inside another --set)`);
    target[last] = valueOf(setting.slice(equals + 1));
  }
  return fields;
}

function valueOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The spec fields a `--spec FILE` holds: a JSON object, as the create request's `spec` takes it. */
export function specFileFields(text: string, path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usageError(`--spec ${path} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw usageError(
      `--spec ${path} must hold a JSON object of spec fields, e.g. {"llm":{"profile":"fast"},"tools":["terminal","finish"]}`,
    );
  return parsed as Record<string, unknown>;
}

/** The agent spec commands (usage's "Agent spec"): the spec shown or changed, the model switched, the requests replayed. */
export type SpecCommand =
  /** Shows the spec in force, or (with a template, settings or a file) changes it from the next step on. */
  | {
      readonly name: 'spec';
      readonly id: string;
      readonly json: boolean;
      readonly template?: string;
      readonly settings: readonly string[];
      readonly specFile?: string;
      readonly reason?: string;
    }
  | { readonly name: 'model'; readonly id: string; readonly profile: string; readonly reason?: string }
  | { readonly name: 'replay'; readonly id: string; readonly check?: string };

/** The command `name` from its arguments. */
export function specCommandOf(name: SpecCommand['name'], rest: readonly string[], values: OptionValues): SpecCommand {
  switch (name) {
    case 'spec': {
      const id = singleId(name, rest);
      const changes = values.template !== undefined || values.set !== undefined || values.spec !== undefined;
      if (!changes && values.reason !== undefined)
        throw usageError('spec --reason goes with a change: --template, --set or --spec');
      if (changes && values.json)
        throw usageError('spec --json shows the spec; a change prints the new spec as the gateway made it');
      return {
        name,
        id,
        json: values.json ?? false,
        ...optional('template', values.template === undefined ? undefined : specName(values.template, '--template')),
        settings: values.set ?? [],
        ...optional('specFile', values.spec),
        ...optional('reason', values.reason),
      };
    }
    case 'model': {
      if (rest.length !== 2)
        throw usageError(
          'model needs ID and PROFILE, e.g. flotilla model my-conversation fast (flotilla info lists the profiles)',
        );
      return {
        name,
        id: conversationId(rest[0]!),
        profile: specName(rest[1]!, 'PROFILE'),
        ...optional('reason', values.reason),
      };
    }
    case 'replay':
      return { name, id: singleId(name, rest), ...optional('check', values.check) };
  }
}
