import { posix } from 'node:path';
import { McpServerName, SecretName } from '@flotilla/events';
import { McpHttpServerConfig, McpStdioServerConfig, type McpServerConfig } from '@flotilla/tools';
import { z } from 'zod';

/** A value an MCP server gets from the conversation's secrets (else its tenant's), by the secret's name: never a value in the spec. */
const FromSecret = z.strictObject({ secret: SecretName });

const timeouts = {
  /** Start (or connect) and list within this time (default 30 s). */
  listTimeoutMs: z.number().int().min(1_000).max(120_000).optional(),
  /** Each call within this time (default 300 s). */
  callTimeoutMs: z.number().int().min(1_000).max(3_600_000).optional(),
};

/** A directory of the workspace, relative to it: never above it. */
const WorkspaceDirectory = z
  .string()
  .min(1)
  .max(1_000)
  .refine(
    (path) => !posix.isAbsolute(path) && !posix.normalize(path).split('/').includes('..'),
    'must be a directory of the workspace, relative to it (no leading / and no ..)',
  );

/**
 * An MCP server started by a command inside the conversation's sandbox, speaking over its stdin
 * and stdout. The command must be one the operator allows (`limits.mcpCommands`).
 */
export const McpStdioServerSpec = McpStdioServerConfig.omit({
  env: true,
  cwd: true,
  listTimeoutMs: true,
  callTimeoutMs: true,
})
  .extend({
    name: McpServerName,
    args: z.array(z.string().max(4_096)).max(64).default([]),
    /** Variables the server gets besides the sandbox's own environment, each from a secret. */
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name'), FromSecret)
      .default({}),
    /** Where it runs (default: the workspace). */
    cwd: WorkspaceDirectory.optional(),
    ...timeouts,
  })
  .strict();
export type McpStdioServerSpec = z.infer<typeof McpStdioServerSpec>;

/**
 * An MCP server at a Streamable HTTP URL, which the tool runner connects to (outside the
 * sandbox: its URL must start with one the operator allows, `limits.mcpUrls`).
 */
export const McpHttpServerSpec = McpHttpServerConfig.omit({ headers: true, listTimeoutMs: true, callTimeoutMs: true })
  .extend({
    name: McpServerName,
    /** Request headers, each from a secret, after an optional fixed `prefix` (`Bearer `). */
    headers: z
      .record(
        z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name'),
        FromSecret.extend({ prefix: z.string().max(64).optional() }),
      )
      .default({}),
    ...timeouts,
  })
  .strict();
export type McpHttpServerSpec = z.infer<typeof McpHttpServerSpec>;

export const McpServerSpec = z.discriminatedUnion('transport', [McpStdioServerSpec, McpHttpServerSpec]);
export type McpServerSpec = z.infer<typeof McpServerSpec>;

/** The MCP servers of a spec: their tools are offered beside the built-in ones once the tool runner has listed them. */
export const McpServersSpec = z
  .array(McpServerSpec)
  .max(16)
  .superRefine((servers, context) => {
    const seen = new Set<string>();
    servers.forEach((server, index) => {
      if (seen.has(server.name))
        context.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `another server is named "${server.name}"`,
        });
      seen.add(server.name);
    });
  })
  .default([]);
export type McpServersSpec = z.infer<typeof McpServersSpec>;

export type McpServerResolution =
  { readonly ok: true; readonly config: McpServerConfig } | { readonly ok: false; readonly message: string };

/**
 * The configuration a server is started or connected with: the spec's, with each secret's value
 * (from `secrets`, the conversation's over its tenant's) and the working directory as the sandbox
 * sees it (under `workspacePath`). A secret that is not set is refused, naming it.
 */
export function resolveMcpServer(
  server: McpServerSpec,
  secrets: Readonly<Record<string, string>>,
  workspacePath: string,
): McpServerResolution {
  const missing = Object.values(server.transport === 'stdio' ? server.env : server.headers)
    .map((value) => value.secret)
    .filter((name) => secrets[name] === undefined);
  if (missing.length > 0)
    return {
      ok: false,
      message: `MCP server "${server.name}" needs the secret${missing.length === 1 ? '' : 's'} ${missing.join(', ')}, not set for this conversation or its tenant`,
    };
  const timeoutsOf = {
    ...(server.listTimeoutMs === undefined ? {} : { listTimeoutMs: server.listTimeoutMs }),
    ...(server.callTimeoutMs === undefined ? {} : { callTimeoutMs: server.callTimeoutMs }),
  };
  if (server.transport === 'http') {
    const headers = Object.fromEntries(
      Object.entries(server.headers).map(([name, value]) => [name, `${value.prefix ?? ''}${secrets[value.secret]!}`]),
    );
    return {
      ok: true,
      config: {
        name: server.name,
        prefix: server.prefix,
        transport: 'http',
        url: server.url,
        ...(Object.keys(headers).length > 0 ? { headers } : {}),
        ...timeoutsOf,
      },
    };
  }
  const env = Object.fromEntries(Object.entries(server.env).map(([name, value]) => [name, secrets[value.secret]!]));
  return {
    ok: true,
    config: {
      name: server.name,
      prefix: server.prefix,
      transport: 'stdio',
      command: server.command,
      args: server.args,
      env,
      cwd: server.cwd === undefined ? workspacePath : posix.join(workspacePath, server.cwd),
      ...timeoutsOf,
    },
  };
}
