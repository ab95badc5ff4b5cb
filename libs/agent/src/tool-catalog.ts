import type { ToolSpec } from '@flotilla/events';
import type { AnyToolDefinition, ToolRegistry } from '@flotilla/tools';

export type CheckedInput =
  { readonly ok: true; readonly input: Record<string, unknown> } | { readonly ok: false; readonly message: string };

/** What the step needs of the tools: their specs, and argument validation without running anything. */
export interface ToolCatalog {
  specs(): readonly ToolSpec[];
  isReadOnly(name: string): boolean;
  check(name: string, input: Record<string, unknown>): CheckedInput;
}

/** A catalog over a tool registry, limited to the tools the agent is configured to offer. */
export function registryCatalog(registry: ToolRegistry, names?: readonly string[]): ToolCatalog {
  const offered = (names ?? registry.names()).filter((name) => registry.get(name) !== undefined);
  const offeredSet = new Set(offered);
  const schemas = new Map(registry.schemas().map((schema) => [schema.name, schema]));
  const specs: ToolSpec[] = offered.map((name) => {
    const tool = registry.get(name)!;
    return {
      name,
      description: tool.description,
      parameters: { ...(schemas.get(name)?.parameters ?? { type: 'object' }) },
      annotations: {
        read_only: tool.annotations.readOnly,
        destructive: tool.annotations.destructive,
        idempotent: tool.annotations.idempotent,
        open_world: tool.annotations.openWorld,
      },
    };
  });
  return {
    specs: () => specs,
    isReadOnly: (name) => registry.get(name)?.annotations.readOnly === true,
    check(name, input) {
      const tool: AnyToolDefinition | undefined = offeredSet.has(name) ? registry.get(name) : undefined;
      if (!tool)
        return {
          ok: false,
          message: `Tool "${name}" does not exist. Available tools: ${offered.join(', ') || '(none)'}.`,
        };
      const parsed = (
        tool.parameters as unknown as {
          safeParse(value: unknown): {
            success: boolean;
            data?: unknown;
            error?: { issues: { path: PropertyKey[]; message: string }[] };
          };
        }
      ).safeParse(input);
      if (parsed.success) return { ok: true, input: parsed.data as Record<string, unknown> };
      const lines = (parsed.error?.issues ?? []).map(
        (issue) => `- ${issue.path.map(String).join('.') || '(arguments)'}: ${issue.message}`,
      );
      return { ok: false, message: `Invalid arguments for tool "${name}":\n${lines.join('\n')}` };
    },
  };
}
