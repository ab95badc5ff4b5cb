import { z } from 'zod';
import { textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';

export const FINISH_TOOL_NAME = 'finish';

export const FinishParameters = z.object({ message: z.string().describe('A summary of what was done, for the user.') });
export type FinishParameters = z.infer<typeof FinishParameters>;

/** Signals the end of the run; the agent layer stops after it (the result carries `details.finished`). */
export function createFinishTool(): ToolDefinition<FinishParameters> {
  return defineTool({
    name: FINISH_TOOL_NAME,
    description:
      'Finish the task: call this when the work is complete (or cannot continue), with a message summarising the outcome for the user.',
    parameters: FinishParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params) {
      return textResult(params.message, { finished: true });
    },
  });
}
