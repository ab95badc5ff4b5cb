import { createHash } from 'node:crypto';
import {
  registryCatalog,
  resolveMcpServer,
  TASK_TOOL,
  type AgentSpec,
  type McpServerResolution,
  type McpServerSpec,
} from '@flotilla/agent';
import type { McpToolsEvent, ToolSpec } from '@flotilla/events';
import type { Logger } from '@flotilla/runtime';
import type { Sandbox } from '@flotilla/sandbox';
import {
  connectMcpServers,
  ToolErrorCode,
  ToolRegistry,
  unavailableMcpTool,
  type AnyToolDefinition,
  type McpConnection,
} from '@flotilla/tools';

/** What one MCP server may put in the log: tools, each description's length, the listing's JSON size. */
export const MCP_LISTING_BOUNDS = { toolsPerServer: 128, descriptionChars: 2_000, listingBytes: 48 * 1024 } as const;

/** One server's answer to a listing: its tools (as the model is offered them), or why it has none. */
export type McpListing =
  | { readonly server: string; readonly tools: readonly ToolSpec[] }
  | {
      readonly server: string;
      readonly tools: readonly [];
      readonly error: { readonly code: string; readonly message: string };
    };

type Server = {
  /** A digest of the server's settings, its secrets' values included, and the sandbox it runs in: another of either starts it again. */
  readonly settings: string;
  readonly sandbox: Sandbox;
  readonly connection: McpConnection | undefined;
  readonly failure: string | undefined;
};

export type McpSessionsOptions = {
  /** The built-in tools, run beside the MCP ones; an MCP tool named like one is not listed. */
  readonly builtins: ToolRegistry;
  readonly logger: Logger;
  /** Conversations whose servers are kept running at most (least recently used are closed). Default 1,000. */
  readonly capacity?: number;
};

export type McpUse = {
  readonly id: string;
  readonly spec: AgentSpec;
  /** The conversation's sandbox now: stdio servers run in it. */
  readonly sandbox: Sandbox;
  /** The conversation's secrets (its tenant's overlaid), for the servers' env and headers. */
  readonly secrets: Readonly<Record<string, string>>;
};

/**
 * The MCP servers of each conversation this tool runner owns, started on first use: stdio ones
 * inside the conversation's sandbox through its process API (never on this host), HTTP ones
 * connected from here. A server whose process exited, whose sandbox was replaced (stopped when
 * idle, restarted for new secrets) or whose settings changed is started again at its next use;
 * one the spec no longer names is closed. A runner that takes a conversation over has none of
 * them and starts them at their next use.
 */
export class McpSessions {
  readonly #options: McpSessionsOptions;
  readonly #sessions = new Map<string, Map<string, Server>>();

  constructor(options: McpSessionsOptions) {
    this.#options = options;
  }

  /** Starts (or keeps) the named servers of the spec and says what each offers, for the log. */
  async list(use: McpUse, names: readonly string[]): Promise<McpListing[]> {
    const servers = await this.#ensure(use, names);
    const taken = new Set([...this.#options.builtins.names(), TASK_TOOL]);
    return names.map((name) => {
      const server = servers.get(name);
      if (!server?.connection)
        return failed(name, server?.failure ?? `MCP server "${name}" is not in the conversation's spec`);
      const tools = server.connection.tools.filter((tool) => {
        if (taken.has(tool.name)) {
          this.#options.logger.warn(
            { server: name, tool: tool.name },
            'an MCP tool named like another tool was not listed',
          );
          return false;
        }
        taken.add(tool.name);
        return true;
      });
      if (tools.length > MCP_LISTING_BOUNDS.toolsPerServer)
        return failed(
          name,
          `MCP server "${name}" lists ${tools.length} tools, more than the ${MCP_LISTING_BOUNDS.toolsPerServer} a server may offer`,
        );
      const specs = registryCatalog(new ToolRegistry(tools))
        .specs()
        .map((spec) => ({ ...spec, description: clip(spec.description, MCP_LISTING_BOUNDS.descriptionChars) }));
      const bytes = Buffer.byteLength(JSON.stringify(specs));
      if (bytes > MCP_LISTING_BOUNDS.listingBytes) {
        return failed(
          name,
          `the tools of MCP server "${name}" take ${Math.ceil(bytes / 1024)} KiB to describe, more than the ${MCP_LISTING_BOUNDS.listingBytes / 1024} KiB a listing may take`,
        );
      }
      return { server: name, tools: specs };
    });
  }

  /**
   * The tools a batch of the conversation runs with: the built-ins, and the tools its servers
   * listed in the log (`listed`), through their connections, each server started again first if
   * it stopped. A listed tool whose server cannot be started answers every call with the reason.
   */
  async registry(use: McpUse, listed: readonly McpToolsEvent[]): Promise<ToolRegistry> {
    const named = listed.filter((listing) => listing.tools.length > 0).map((listing) => listing.server);
    const builtins = this.#options.builtins;
    if (named.length === 0) return builtins;
    const servers = await this.#ensure(use, named);
    const tools: AnyToolDefinition[] = builtins.names().map((name) => builtins.get(name)!);
    const taken = new Set(builtins.names());
    for (const listing of listed) {
      const server = servers.get(listing.server);
      const live = new Map((server?.connection?.tools ?? []).map((tool) => [tool.name, tool as AnyToolDefinition]));
      for (const spec of listing.tools) {
        if (taken.has(spec.name)) continue;
        taken.add(spec.name);
        const reason = server?.failure ?? `MCP server "${listing.server}" no longer offers it`;
        tools.push(
          live.get(spec.name) ??
            (unavailableMcpTool({ exposedName: spec.name, serverName: listing.server, reason }) as AnyToolDefinition),
        );
      }
    }
    return new ToolRegistry(tools);
  }

  /** Stops the conversation's servers (it was deleted, or this runner stops). */
  async close(id: string): Promise<void> {
    const servers = this.#sessions.get(id);
    this.#sessions.delete(id);
    await Promise.allSettled([...(servers?.values() ?? [])].map((server) => server.connection?.close()));
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.#sessions.keys()].map((id) => this.close(id)));
  }

  /** The conversation's servers, with `names` connected (started again where needed) and those the spec no longer has closed. */
  async #ensure(use: McpUse, names: readonly string[]): Promise<Map<string, Server>> {
    const servers = this.#sessions.get(use.id) ?? new Map<string, Server>();
    const wanted = new Map(use.spec.mcpServers.map((server) => [server.name, resolved(server, use)]));
    const closing: Promise<void>[] = [];
    for (const [name, server] of servers) {
      const spec = wanted.get(name);
      if (spec === undefined || !fits(server, spec, use)) {
        servers.delete(name);
        if (server.connection) closing.push(server.connection.close());
      }
    }
    await Promise.allSettled(closing);
    await Promise.all(
      names.map(async (name) => {
        const spec = wanted.get(name);
        if (!spec || servers.get(name)?.connection) return;
        const server = await this.#start(spec.server, spec.resolution, spec.settings, use);
        servers.set(name, server);
      }),
    );
    this.#sessions.delete(use.id);
    this.#sessions.set(use.id, servers); // most recently used last
    for (const [id] of this.#sessions) {
      if (this.#sessions.size <= (this.#options.capacity ?? 1_000)) break;
      void this.close(id);
    }
    return servers;
  }

  async #start(spec: McpServerSpec, resolved: McpServerResolution, settings: string, use: McpUse): Promise<Server> {
    if (!resolved.ok) return { settings, sandbox: use.sandbox, connection: undefined, failure: resolved.message };
    const connection = await connectMcpServers([resolved.config], {
      sandbox: use.sandbox,
      logger: this.#options.logger,
      clientName: 'flotilla-tool-runner',
    });
    const failure = connection.failures[0]?.error.message;
    if (failure !== undefined || !connection.isOpen()) {
      await connection.close();
      return {
        settings,
        sandbox: use.sandbox,
        connection: undefined,
        failure: failure ?? `MCP server "${spec.name}" closed its connection at once`,
      };
    }
    this.#options.logger.info(
      { conversation: use.id, server: spec.name, tools: connection.tools.length },
      'MCP server started',
    );
    return { settings, sandbox: use.sandbox, connection, failure: undefined };
  }
}

type Wanted = { readonly server: McpServerSpec; readonly resolution: McpServerResolution; readonly settings: string };

/** A server of the spec with its secrets filled in, and a digest of that (never kept in clear beside the connection). */
function resolved(server: McpServerSpec, use: McpUse): Wanted {
  const resolution = resolveMcpServer(server, use.secrets, use.sandbox.workspacePath);
  return { server, resolution, settings: createHash('sha256').update(JSON.stringify(resolution)).digest('base64url') };
}

/** Whether a server kept from before still serves `wanted` here: same settings and secrets, same sandbox (for stdio), still connected. */
function fits(server: Server, wanted: Wanted, use: McpUse): boolean {
  if (server.settings !== wanted.settings) return false;
  if (wanted.server.transport === 'stdio' && server.sandbox !== use.sandbox) return false;
  return server.connection?.isOpen() === true;
}

function failed(server: string, message: string): McpListing {
  return { server, tools: [], error: { code: ToolErrorCode.McpConnectFailed, message: clip(message, 4_000) } };
}

function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}
