import type { Workspace } from '../core/workspace.js';
import path from 'node:path';
import { z } from 'zod';
import { describeError, isToolError, ToolErrorCode } from '../core/errors.js';
import { errorResult, textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { parseOpenAiPatch } from './parse-openai-patch.js';
import { parseUnifiedDiff } from './parse-unified-diff.js';
import type { FileChange, ParsedPatch } from './patch-model.js';
import type { PatchPlan } from './plan-patch.js';
import { planPatch } from './plan-patch.js';

export const ApplyPatchParameters = z.object({
  patch: z
    .string()
    .min(1)
    .describe(
      'The patch: a "*** Begin Patch" … "*** End Patch" block, or a unified diff (--- a/file, +++ b/file, @@ hunks). Paths are relative to the workspace root or absolute inside it.',
    ),
});
export type ApplyPatchParameters = z.infer<typeof ApplyPatchParameters>;

/** Parse either supported patch format. */
export function parsePatch(patch: string): ParsedPatch {
  return patch.includes('*** Begin Patch') ? parseOpenAiPatch(patch) : parseUnifiedDiff(patch);
}

function touchedPaths(changes: readonly FileChange[]): string[] {
  return changes.flatMap((change) =>
    change.kind === 'update' && change.moveTo !== undefined ? [change.path, change.moveTo] : [change.path],
  );
}

/** Write the plan; on any failure restore what was already written. */
async function commit(plan: PatchPlan, files: Pick<Workspace, 'readFile' | 'writeFile' | 'removeFile'>): Promise<void> {
  const originals = new Map<string, Buffer | null>();
  try {
    for (const [filePath, content] of plan.writes) {
      originals.set(filePath, await files.readFile(filePath).catch(() => null));
      if (content === null) await files.removeFile(filePath);
      else await files.writeFile(filePath, content);
    }
  } catch (error) {
    for (const [filePath, original] of originals) {
      await (original === null ? files.removeFile(filePath) : files.writeFile(filePath, original)).catch(
        () => undefined,
      );
    }
    throw error;
  }
}

export function createApplyPatchTool(): ToolDefinition<ApplyPatchParameters> {
  return defineTool({
    name: 'apply_patch',
    description:
      'Apply a patch to files in the workspace, atomically: either every hunk applies or nothing changes. Accepts the "*** Begin Patch" format (*** Add File / *** Update File / *** Delete File / *** Move to, @@ hunks with " ", "-", "+" lines) or a unified diff.',
    parameters: ApplyPatchParameters,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
    resources: (params, context) => {
      const parsed = parsePatch(params.patch);
      if (!parsed.ok) return [];
      return touchedPaths(parsed.changes).map((file) => `file:${path.resolve(context.workspace.root, file)}`);
    },
    async execute(params, context) {
      const parsed = parsePatch(params.patch);
      if (!parsed.ok)
        return errorResult(`The patch could not be parsed: ${parsed.message} Nothing was changed.`, {
          error_code: ToolErrorCode.PatchFailed,
        });
      let planned;
      try {
        planned = await planPatch(parsed.changes, context.workspace);
      } catch (error) {
        if (isToolError(error)) return errorResult(`${error.message} Nothing was changed.`, { error_code: error.code });
        return errorResult(`The patch failed: ${describeError(error)}. Nothing was changed.`, {
          error_code: ToolErrorCode.PatchFailed,
        });
      }
      if (!planned.ok)
        return errorResult(`${planned.message}\nNothing was changed.`, { error_code: ToolErrorCode.PatchFailed });
      try {
        await commit(planned.plan, context.workspace);
      } catch (error) {
        return errorResult(
          `Writing the patched files failed (${describeError(error)}); the files written so far were restored.`,
          { error_code: ToolErrorCode.PatchFailed },
        );
      }
      return textResult(`Patch applied:\n${planned.plan.summary.join('\n')}`, {
        files: [...planned.plan.writes.keys()],
      });
    },
  });
}
