import { API_KEY_HEADER, ErrorBody } from '@flotilla/api';
import { z } from 'zod';
import type { RawBody, RouteSpec } from './route-table.js';

type Json = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted (appended to the log)',
  204: 'No content',
  400: 'Bad request (invalid_json, validation_failed, invalid_cursor)',
  401: 'No valid API key (unauthorized)',
  403: 'Not allowed (forbidden)',
  404: 'Not found (for your tenant)',
  409: 'Conflict with the conversation status',
  413: 'Body too large',
  415: 'Not JSON (unsupported_media_type)',
  429: 'Rate limited or run capacity exhausted (see Retry-After)',
  502: "The conversation's model failed to answer (ask_failed)",
  503: 'NATS unreachable (unavailable: retry), or secrets not configured on this gateway (secrets_not_configured)',
};

const schemaOf = (schema: z.ZodType, io: 'input' | 'output'): Json => {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete json['$schema'];
  return json;
};

/** Query and path schemas as OpenAPI parameters (one per property). */
function parameters(schema: z.ZodType | undefined, where: 'query' | 'path'): Json[] {
  if (!schema) return [];
  const json = schemaOf(schema, 'input');
  const properties = (json['properties'] ?? {}) as Record<string, Json>;
  const required = new Set((json['required'] ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(typeof property['description'] === 'string' ? { description: property['description'] } : {}),
    schema: property,
  }));
}

/** Bytes of any kind (OpenAPI 3.1: a string of that media type, no JSON Schema for its content). */
function rawContent(body: RawBody): Json {
  return { [body.contentType]: { schema: { type: 'string', contentMediaType: body.contentType } } };
}

/** The OpenAPI 3.1 document of the route table. */
export function openApiDocument(routes: readonly RouteSpec[], info: { version: string }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const responses: Record<string, Json> = {};
    for (const [status, schema] of Object.entries(route.responses)) {
      const raw = route.rawResponse?.status === Number(status) ? route.rawResponse : undefined;
      responses[status] = raw
        ? { description: raw.description, content: rawContent(raw) }
        : {
            description: STATUS_TEXT[Number(status)] ?? 'OK',
            ...(schema ? { content: { 'application/json': { schema: schemaOf(schema, 'output') } } } : {}),
          };
    }
    const errors = new Set([
      400,
      429,
      503,
      ...(route.access === 'public' ? [] : [401]),
      ...(route.body || route.rawBody ? [413, 415] : []),
      ...(route.errors ?? []),
    ]);
    for (const status of [...errors].sort()) {
      responses[String(status)] = {
        description: STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      ...(route.access === 'public' ? { security: [] } : {}),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body
        ? {
            requestBody: {
              required: !route.body.safeParse(undefined).success,
              content: { 'application/json': { schema: schemaOf(route.body, 'input') } },
            },
          }
        : route.rawBody
          ? {
              requestBody: {
                required: true,
                description: route.rawBody.description,
                content: rawContent(route.rawBody),
              },
            }
          : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Flotilla gateway API',
      version: info.version,
      description:
        'REST API of the Flotilla gateway. Authenticate with `Authorization: Bearer <key>` or `x-api-key`. ' +
        'Errors have a stable `error.code`. Live events: open a WebSocket on GET /v1/conversations/{id}/events?after_seq=N (see docs/protocol.md).',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }, { apiKey: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        apiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER },
      },
      schemas: { Error: schemaOf(ErrorBody, 'output') },
    },
    paths,
  };
}

/** A small, dependency-free HTML rendering of the document at /docs. */
export function openApiHtml(document: Json): string {
  const escape = (text: string): string =>
    text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
  const rows: string[] = [];
  for (const [path, methods] of Object.entries(document['paths'] as Record<string, Record<string, Json>>)) {
    for (const [method, operation] of Object.entries(methods)) {
      rows.push(
        `<tr><td class="m ${method}">${method.toUpperCase()}</td><td><code>${escape(path)}</code></td><td>${escape(String(operation['summary'] ?? ''))}</td><td>${Object.keys(operation['responses'] as Json).join(' ')}</td></tr>`,
      );
    }
  }
  const info = document['info'] as { title: string; version: string; description: string };
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(info.title)}</title><style>
body{font:14px system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;width:100%}td{padding:.35rem .6rem;border-bottom:1px solid #eee;vertical-align:top}
.m{font-weight:600;font-family:monospace}.get{color:#0a7}.post{color:#06c}.patch{color:#a60}.delete{color:#c33}code{font-size:13px}</style></head><body>
<h1>${escape(info.title)} <small>${escape(info.version)}</small></h1><p>${escape(info.description)}</p>
<p>The machine-readable document: <a href="/docs/openapi.json">/docs/openapi.json</a></p>
<table><tr><th>Method</th><th>Path</th><th>Summary</th><th>Statuses</th></tr>${rows.join('')}</table></body></html>`;
}
