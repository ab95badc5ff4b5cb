import { z } from 'zod';
import { malformedResponse } from './errors.js';

/** Reads provider output through a tolerant schema; a mismatch is a `malformed_response`, never a crash. */
export function parseWire<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  provider: string,
  what: string,
): z.infer<Schema> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw malformedResponse(
    provider,
    `${what} does not match the expected shape: ${z.prettifyError(parsed.error)}`,
    parsed.error,
  );
}

/** `JSON.parse` for tool arguments that must be an object (Anthropic tool_use input). */
export function parseJsonObject(raw: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw === '' ? '{}' : raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
