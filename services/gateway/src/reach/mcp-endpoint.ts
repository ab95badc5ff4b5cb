// `/mcp`: Flotilla as an MCP server over Streamable HTTP, stateless: a server and transport per
// POST, so any gateway instance answers any request and nothing is held between them (a run's
// state is the conversation's, in the log). The access hook has checked the bearer key first.
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import type { EndpointContext } from './endpoint-context.js';
import { flotillaMcpServer } from './mcp-server.js';

const MCP_PATH = '/mcp';

/** A JSON-RPC error with no request to answer (the transport's own failures, methods it does not serve). */
const jsonRpcError = (code: number, message: string): string =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });

export function registerMcpEndpoint(app: FastifyInstance, context: EndpointContext): void {
  const logger = context.logger.child({ endpoint: 'mcp' });
  // the requests in flight: a run followed for minutes must not hold the gateway's shutdown
  const open = new Set<StreamableHTTPServerTransport>();
  app.addHook('preClose', async () => {
    await Promise.allSettled([...open].map((transport) => transport.close()));
  });

  app.post(MCP_PATH, { config: { access: 'tenant' } }, async (request, reply) => {
    const scope = {
      runs: context.runs,
      client: context.runs.clientFor(request),
      logger: logger.child({ tenant: request.tenant }),
    };
    const server = flotillaMcpServer(scope, context.version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    reply.hijack();
    open.add(transport);
    reply.raw.once('close', () => {
      open.delete(transport);
      // aborts the tool calls still going (a run followed goes on without its follower)
      server.close().catch((error: unknown) => scope.logger.warn({ err: error }, 'closing an MCP server failed'));
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      scope.logger.error({ err: error }, 'an MCP request failed');
      if (!reply.raw.headersSent)
        reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(jsonRpcError(-32603, 'Internal error'));
    }
  });

  // stateless: no session to stream to (GET) or to end (DELETE)
  for (const method of ['GET', 'DELETE'] as const)
    app.route({
      method,
      url: MCP_PATH,
      config: { access: 'tenant' },
      handler: async (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .type('application/json')
          .send(jsonRpcError(-32000, 'Method not allowed: this MCP server is stateless; send each request with POST.')),
    });
}
