import type { ToolContext } from './context.js';
import { describeError, ToolError, ToolErrorCode } from './errors.js';
import { describeIssues } from './argument-errors.js';
import { parametersJsonSchema } from './json-schema.js';
import { boundOutput } from './output-bounds.js';
import type { ToolContent, ToolResult } from './result.js';
import { errorResult } from './result.js';
import type { AnyToolDefinition, JsonSchema, ResourceContext } from './tool-definition.js';

/** What the model is told about a tool. */
export type ToolSchema = { readonly name: string; readonly description: string; readonly parameters: JsonSchema };

/** A tool call as the model produced it: raw JSON arguments. */
export type RawToolCall = { readonly name: string; readonly arguments: string };

export type ValidatedToolCall =
  | {
      readonly ok: true;
      readonly tool: AnyToolDefinition;
      readonly params: unknown;
      readonly resources: readonly string[];
    }
  | { readonly ok: false; readonly code: ToolErrorCode; readonly message: string };

export type ToolRegistryOptions = {
  /** Character limit for a result's text before it is offloaded (default 30,000). */
  readonly outputLimit?: number;
};

function parseJson(raw: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch (error) {
    return { ok: false, reason: describeError(error) };
  }
}

/** Looks tools up by name, lists their schemas, validates raw arguments and executes. */
export class ToolRegistry {
  readonly #tools = new Map<string, AnyToolDefinition>();
  readonly #schemas = new Map<string, JsonSchema>();
  readonly #outputLimit: number | undefined;

  constructor(tools: readonly AnyToolDefinition[] = [], options: ToolRegistryOptions = {}) {
    this.#outputLimit = options.outputLimit;
    for (const tool of tools) this.register(tool);
  }

  register(tool: AnyToolDefinition): this {
    if (this.#tools.has(tool.name))
      throw new ToolError(ToolErrorCode.DuplicateTool, `A tool named "${tool.name}" is already registered.`);
    this.#tools.set(tool.name, tool);
    return this;
  }

  get(name: string): AnyToolDefinition | undefined {
    return this.#tools.get(name);
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  schemas(): ToolSchema[] {
    return [...this.#tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: this.#schemaOf(tool),
    }));
  }

  /** Parse and validate a call; failures are values whose message the model can act on. */
  validate(call: RawToolCall, context: ResourceContext): ValidatedToolCall {
    const tool = this.#tools.get(call.name);
    if (tool === undefined) {
      const available = this.names().join(', ') || '(none)';
      return {
        ok: false,
        code: ToolErrorCode.UnknownTool,
        message: `Tool "${call.name}" does not exist. Available tools: ${available}.`,
      };
    }
    const json = parseJson(call.arguments);
    if (!json.ok) {
      return {
        ok: false,
        code: ToolErrorCode.InvalidJson,
        message: `The arguments for tool "${call.name}" are not valid JSON (${json.reason}). Send a single JSON object matching the tool's parameters.`,
      };
    }
    if (json.value === null || typeof json.value !== 'object' || Array.isArray(json.value)) {
      return {
        ok: false,
        code: ToolErrorCode.InvalidArguments,
        message: `The arguments for tool "${call.name}" must be a JSON object, got ${Array.isArray(json.value) ? 'an array' : typeof json.value}.`,
      };
    }
    const parsed = tool.parameters.safeParse(json.value);
    if (!parsed.success) {
      return {
        ok: false,
        code: ToolErrorCode.InvalidArguments,
        message: `Invalid arguments for tool "${call.name}":\n${describeIssues(parsed.error.issues)}`,
      };
    }
    const params = parsed.data as never;
    return { ok: true, tool, params, resources: tool.resources(params, context) };
  }

  /** Validate and run a call. Never throws: every failure becomes an error result. */
  async execute(call: RawToolCall, context: ToolContext): Promise<ToolResult> {
    const validated = this.validate(call, context);
    if (!validated.ok) return errorResult(validated.message, { error_code: validated.code });
    let result: ToolResult;
    try {
      result = await validated.tool.execute(validated.params as never, context);
    } catch (error) {
      context.logger.error({ tool: call.name, err: error }, 'tool execution threw');
      result = errorResult(`Tool "${call.name}" failed: ${describeError(error)}`, {
        error_code: ToolErrorCode.ExecutionFailed,
      });
    }
    return this.#bound(call.name, result, context);
  }

  /** Close every tool that holds processes or connections. */
  /** Release what every tool holds for one conversation. */
  async closeConversation(conversationId: string): Promise<void> {
    await Promise.allSettled([...this.#tools.values()].map((tool) => tool.closeConversation?.(conversationId)));
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#tools.values()].map((tool) => tool.close?.()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #schemaOf(tool: AnyToolDefinition): JsonSchema {
    let schema = this.#schemas.get(tool.name);
    if (schema === undefined) {
      schema = tool.jsonSchema ?? parametersJsonSchema(tool.parameters);
      this.#schemas.set(tool.name, schema);
    }
    return schema;
  }

  async #bound(name: string, result: ToolResult, context: ToolContext): Promise<ToolResult> {
    const content: ToolContent[] = [];
    for (const part of result.content) {
      if (part.type !== 'text') {
        content.push(part);
        continue;
      }
      const bounded = await boundOutput(part.text, {
        toolName: name,
        outputDir: context.outputDir,
        limit: this.#outputLimit,
        ...(context.redact ? { redact: context.redact } : {}),
      });
      content.push(bounded.truncated || context.redact ? { type: 'text', text: bounded.text } : part);
    }
    return { ...result, content };
  }
}
