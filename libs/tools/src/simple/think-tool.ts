import { z } from 'zod';
import { textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';

export const ThinkParameters = z.object({ thought: z.string().describe('Your reasoning.') });
export type ThinkParameters = z.infer<typeof ThinkParameters>;

/** Lets the model reason out loud; nothing changes. */
export function createThinkTool(): ToolDefinition<ThinkParameters> {
  return defineTool({
    name: 'think',
    description:
      'Think through a problem, brainstorm fixes or plan the next steps. It changes nothing and fetches nothing; it only records the thought.',
    parameters: ThinkParameters,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    resources: () => [],
    async execute(params, context) {
      context.logger.debug({ thought: params.thought }, 'think');
      return textResult('Your thought has been logged.');
    },
  });
}
