import { z } from 'zod';
import type { JsonSchema } from './tool-definition.js';

const SAFE_BOUNDS = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

function clean(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clean);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$schema') continue;
    if ((key === 'minimum' || key === 'maximum') && typeof child === 'number' && SAFE_BOUNDS.has(child)) continue;
    out[key] = clean(child);
  }
  return out;
}

/**
 * The JSON Schema of a zod parameter schema as the model should see it: input
 * shape (defaults make fields optional), without `$schema` and the
 * safe-integer bounds zod adds to every `.int()`.
 */
export function parametersJsonSchema(schema: z.ZodType): JsonSchema {
  return clean(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as JsonSchema;
}
