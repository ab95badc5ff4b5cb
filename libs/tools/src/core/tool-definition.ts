import { z } from 'zod';
import type { ToolContext } from './context.js';
import type { ToolResult } from './result.js';

/** Hints for runners and confirmation policies (same meaning as MCP tool annotations). */
export type ToolAnnotations = {
  readonly readOnly: boolean;
  readonly destructive: boolean;
  readonly idempotent: boolean;
  readonly openWorld: boolean;
};

export type JsonSchema = Readonly<Record<string, unknown>>;

/** What `resources()` may look at: enough to resolve paths, nothing to execute with. */
export type ResourceContext = Pick<ToolContext, 'workspace' | 'conversationId'>;

/**
 * A tool the model can call. `execute` turns expected failures into results
 * with `isError: true`; it throws only for bugs.
 */
export type ToolDefinition<Params = unknown> = {
  readonly name: string;
  readonly description: string;
  /** Validates the model's arguments. */
  readonly parameters: z.ZodType<Params>;
  /** JSON Schema shown to the model; derived from `parameters` when absent. */
  readonly jsonSchema?: JsonSchema;
  readonly annotations: ToolAnnotations;
  /**
   * Resource keys this call touches (`file:/abs/path`, `terminal:<conversation>`).
   * Calls sharing a key must not run concurrently.
   */
  resources(params: Params, context: ResourceContext): readonly string[];
  execute(params: Params, context: ToolContext): Promise<ToolResult>;
  /** Release processes and connections held by the tool. */
  close?(): Promise<void>;
  /** Release what the tool holds for one conversation (it was deleted, or its sandbox stopped). */
  closeConversation?(conversationId: string): Promise<void>;
};

/** Any tool, whatever its parameters: it can be listed and described, and executed with validated parameters. */
export type AnyToolDefinition = Omit<ToolDefinition<never>, 'parameters'> & { readonly parameters: z.ZodType };

/**
 * Define a tool with its parameter type inferred from the zod schema. An object schema is made
 * strict here, for every tool at once: an argument the tool does not know (a misspelt `cmd` for
 * `command`) is refused with an error the model reads, instead of being dropped while the call
 * runs on defaults; the JSON Schema the model is shown says so (`additionalProperties: false`).
 */
export function defineTool<Schema extends z.ZodType>(
  definition: ToolDefinition<z.output<Schema>> & { readonly parameters: Schema },
): ToolDefinition<z.output<Schema>> {
  const parameters = definition.parameters;
  if (!(parameters instanceof z.ZodObject)) return definition;
  return { ...definition, parameters: parameters.strict() } as unknown as ToolDefinition<z.output<Schema>>;
}
