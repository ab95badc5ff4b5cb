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
