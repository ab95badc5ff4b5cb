import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Sandbox } from '@flotilla/sandbox';
import { describeError, ToolError, ToolErrorCode } from '../core/errors.js';
import type { ToolLogger } from '../core/logger.js';
import { silentLogger } from '../core/logger.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import type { McpServerConfig, McpServerConfigInput } from './mcp-config.js';
import { McpServerConfig as McpServerConfigSchema, mcpToolName } from './mcp-config.js';
import type { McpToolParameters } from './mcp-tool.js';
import { createMcpTool } from './mcp-tool.js';
import { SandboxStdioTransport } from './sandbox-stdio-transport.js';

export type ConnectMcpOptions = {
  readonly logger?: ToolLogger;
  /** Connect and list tools within this time (default 30 s, as OpenHands). */
  readonly listTimeoutMs?: number;
  /** Per-call timeout (default 300 s). */
  readonly callTimeoutMs?: number;
  readonly clientName?: string;
  /**
   * Where stdio servers run: the conversation's sandbox (what an agent's spec starts is as
   * untrusted as the agent). Without one they run on this host, as this process: trusted setups only.
   */
  readonly sandbox?: Sandbox;
};

export type McpServerFailure = { readonly server: string; readonly error: ToolError };

export type McpConnection = {
  readonly tools: readonly ToolDefinition<McpToolParameters>[];
  /** Servers that could not be configured, started or listed; they were skipped. */
  readonly failures: readonly McpServerFailure[];
  /** Whether every server it connected is still connected (a server that exited or was closed is not). */
  isOpen(): boolean;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

function createTransport(config: McpServerConfig, stderrTail: string[], sandbox: Sandbox | undefined): Transport {
  if (config.transport === 'http') {
    return new StreamableHTTPClientTransport(
      new URL(config.url),
      config.headers ? { requestInit: { headers: config.headers } } : undefined,
    );
  }
  const keepTail = (text: string): void => {
    stderrTail.push(text);
    while (stderrTail.join('').length > 2_000 && stderrTail.length > 1) stderrTail.shift();
  };
  if (sandbox) {
    return new SandboxStdioTransport(sandbox, {
      command: config.command,
      args: config.args,
      ...(config.env === undefined ? {} : { env: config.env }),
      ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      onStderr: keepTail,
    });
  }
  const transport = new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => keepTail(chunk.toString('utf8')));
  return transport;
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function listAllTools(client: Client, timeout: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/**
 * Connect to MCP servers, list their tools and expose each as a ToolDefinition.
 * A server that is misconfigured, fails to start or to list is logged,
 * reported in `failures` and skipped; this never throws.
 */
export async function connectMcpServers(
  configs: readonly McpServerConfigInput[],
  options: ConnectMcpOptions = {},
): Promise<McpConnection> {
  const logger = options.logger ?? silentLogger;
  const clients: Client[] = [];
  const failures: McpServerFailure[] = [];
  const tools: ToolDefinition<McpToolParameters>[] = [];
  const taken = new Set<string>();

  const connectOne = async (
    input: McpServerConfigInput,
    index: number,
  ): Promise<{ config: McpServerConfig; client: Client; listed: Tool[] } | undefined> => {
    const name = typeof input.name === 'string' && input.name !== '' ? input.name : `server #${index + 1}`;
    const parsed = McpServerConfigSchema.safeParse(input);
    if (!parsed.success) {
      failures.push({
        server: name,
        error: new ToolError(
          ToolErrorCode.McpConnectFailed,
          `Invalid MCP server configuration for "${name}": ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
        ),
      });
      return undefined;
    }
    const config = parsed.data;
    const timeout = config.listTimeoutMs ?? options.listTimeoutMs ?? 30_000;
    const stderrTail: string[] = [];
    const client = new Client({ name: options.clientName ?? 'flotilla', version: '0.1.0' });
    try {
      await withTimeout(
        (async () => {
          await client.connect(createTransport(config, stderrTail, options.sandbox), { timeout });
        })(),
        timeout,
        `Connecting to MCP server "${config.name}"`,
      );
      const listed = await withTimeout(
        listAllTools(client, timeout),
        timeout,
        `Listing the tools of MCP server "${config.name}"`,
      );
      return { config, client, listed };
    } catch (error) {
      await client.close().catch(() => undefined);
      const stderr = stderrTail.join('').trim();
      const message = `MCP server "${config.name}" could not be started or listed: ${describeError(error)}${stderr === '' ? '' : ` (stderr: ${stderr.slice(-500)})`}`;
      failures.push({
        server: config.name,
        error: new ToolError(ToolErrorCode.McpConnectFailed, message, { cause: error, isRetryable: true }),
      });
      logger.warn({ server: config.name, err: error }, 'MCP server skipped');
      return undefined;
    }
  };

  const connected = await Promise.all(configs.map(connectOne));
  let closed = 0;
  for (const server of connected) {
    if (server === undefined) continue;
    clients.push(server.client);
    server.client.onclose = () => {
      closed += 1;
    };
    const callTimeoutMs = server.config.callTimeoutMs ?? options.callTimeoutMs ?? 300_000;
    for (const tool of server.listed) {
      const exposedName = mcpToolName(server.config, tool.name);
      if (taken.has(exposedName)) {
        logger.warn({ server: server.config.name, tool: exposedName }, 'duplicate MCP tool name skipped');
        continue;
      }
      taken.add(exposedName);
      tools.push(
        createMcpTool({ client: server.client, serverName: server.config.name, tool, exposedName, callTimeoutMs }),
      );
    }
    logger.info({ server: server.config.name, tools: server.listed.length }, 'MCP server connected');
  }

  const close = async (): Promise<void> => {
    await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  };
  return { tools, failures, isOpen: () => closed === 0 && clients.length > 0, close, [Symbol.asyncDispose]: close };
}
