import { stat } from 'node:fs/promises';
import type { ToolContext } from '../core/context.js';
import { isToolError } from '../core/errors.js';
import type { ToolResult } from '../core/result.js';
import { errorResult } from '../core/result.js';

/** Resolve the directory (or file) to search, or an error result for the model. */
export async function resolveSearchRoot(
  requested: string | undefined,
  context: ToolContext,
): Promise<{ ok: true; root: string } | { ok: false; result: ToolResult }> {
  let root: string;
  try {
    root = await context.workspace.resolvePath(requested ?? '.');
  } catch (error) {
    if (isToolError(error)) return { ok: false, result: errorResult(error.message, { error_code: error.code }) };
    throw error;
  }
  const exists = await stat(root).then(
    () => true,
    () => false,
  );
  if (!exists) return { ok: false, result: errorResult(`The path ${root} does not exist.`) };
  return { ok: true, root };
}
