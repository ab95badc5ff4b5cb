// The OpenAPI document: served, committed, valid, and exactly the routes fastify serves, each
// with its statuses, parameters and body; and GET /docs listing it. (Requests that probe each
// documented operation: openapi-probes.test.ts.)
import { API_PREFIX, ERROR_CODES } from '@flotilla/api';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import {
  document,
  h,
  operations,
  specOf,
  startDocumentedGateway,
  toFastify,
  toOpenApi,
  type Document,
  type Json,
} from './test-support/openapi-document.js';

startDocumentedGateway();

/**
 * Every (method, url) fastify has registered, read from `printRoutes` (the tree of the router):
 * an `onRoute` hook cannot be added once the app is built, but the router can be printed.
 */
function registeredRoutes(): { method: string; url: string }[] {
  const tree = h.gateway.app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const routes: { method: string; url: string }[] = [];
  for (const line of tree.split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?\s*$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const url = (depth > 0 ? stack[depth - 1]! : '') + match[2]!;
    stack[depth] = url;
    stack.length = depth + 1;
    for (const method of (match[3] ?? '')
      .split(',')
      .map((text) => text.trim())
      .filter(Boolean))
      routes.push({ method, url });
  }
  return routes;
}

describe('the OpenAPI document', () => {
  it('is served at /docs/openapi.json as the gateway built it', async () => {
    const response = await fetch(`${h.url}/docs/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it('is the document committed as docs/openapi.json (after a route change: npm run openapi, and commit it)', async () => {
    await expect(`${JSON.stringify(document, null, 2)}\n`).toMatchFileSnapshot('../../../docs/openapi.json');
  });

  it('validates as OpenAPI 3.1 (and the validator rejects a broken copy)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document) as unknown as Json);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);

    // the validator really validates: an operation whose response has no description is refused
    const broken = structuredClone(document) as unknown as Document;
    const first = Object.values(Object.values(broken.paths)[0]!)[0]!;
    delete (first.responses['400'] as { description?: string }).description;
    expect((await new Validator().validate(broken as unknown as Json)).valid).toBe(false);
  });

  it('has only internal $refs, and each resolves', () => {
    const refs: string[] = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object') {
        for (const [key, inner] of Object.entries(value)) {
          if (key === '$ref' && typeof inner === 'string') refs.push(inner);
          else walk(inner);
        }
      }
    };
    walk(document);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\//);
      let target: unknown = document;
      for (const part of ref.slice(2).split('/'))
        target = (target as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      expect(target, ref).toBeTypeOf('object');
    }
    expect(JSON.stringify(document)).not.toContain('"$schema"');
  });

  it('documents exactly the route table: one operation per route, unique operationIds', () => {
    const documented = operations().map(({ method, path, operation }) => `${method} ${path} ${operation.operationId}`);
    const table = h.gateway.routes.map((route) => `${route.method} ${toOpenApi(route.url)} ${route.operationId}`);
    expect(documented.sort()).toEqual(table.sort());
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const path of Object.keys(document.paths)) {
      expect(path.startsWith(`${API_PREFIX}/`), path).toBe(true);
      expect(path, 'fastify syntax leaked into the document').not.toContain(':');
    }
  });

  it('every documented operation is registered in fastify', () => {
    for (const { method, path } of operations()) {
      expect(h.gateway.app.hasRoute({ method, url: toFastify(path) }), `${method} ${path}`).toBe(true);
    }
    // the check can fail: a route that does not exist is not found
    expect(h.gateway.app.hasRoute({ method: 'PUT', url: '/v1/conversations/:id' })).toBe(false);
  });

  it('every route fastify serves under /v1 is documented (HEAD aside, which fastify adds to each GET)', () => {
    const registered = registeredRoutes();
    // the parse of the router's tree found the routes outside /v1 too
    expect(registered).toEqual(
      expect.arrayContaining([
        { method: 'GET', url: '/health' },
        { method: 'GET', url: '/docs/openapi.json' },
      ]),
    );
    const underPrefix = registered.filter((route) => route.url.startsWith(`${API_PREFIX}/`) && route.method !== 'HEAD');
    expect(underPrefix.length).toBeGreaterThanOrEqual(h.gateway.routes.length);
    for (const route of underPrefix) {
      const operation = document.paths[toOpenApi(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url} is served but not documented`).toBeDefined();
    }
    // and every GET's HEAD twin is really a GET route
    for (const route of registered.filter((candidate) => candidate.method === 'HEAD')) {
      expect(registered, `HEAD ${route.url}`).toContainEqual({ method: 'GET', url: route.url });
    }
  });

  it('each operation documents its success statuses, 400, 401 and the error schema', () => {
    for (const { method, path, operation } of operations()) {
      const spec = specOf(operation.operationId);
      const where = `${method} ${path}`;
      const statuses = Object.keys(operation.responses);
      for (const success of Object.keys(spec.responses)) {
        expect(statuses, `${where} success ${success}`).toContain(success);
        expect(Number(success)).toBeGreaterThanOrEqual(200);
        expect(Number(success)).toBeLessThan(300);
        const schema = spec.responses[Number(success)];
        if (schema)
          expect(
            operation.responses[success]!.content?.['application/json']?.schema,
            `${where} ${success} schema`,
          ).toBeTypeOf('object');
        else if (spec.rawResponse?.status === Number(success))
          expect(
            operation.responses[success]!.content?.['application/octet-stream']?.schema,
            `${where} ${success} bytes`,
          ).toEqual({ type: 'string', contentMediaType: 'application/octet-stream' });
        else expect(operation.responses[success]!.content, `${where} ${success} has no body`).toBeUndefined();
      }
      expect(statuses, where).toContain('400');
      expect(spec.access).not.toBe('public');
      expect(statuses, where).toContain('401');
      expect(operation.security ?? document, `${where} must not opt out of security`).not.toEqual([]);
      if (spec.access === 'admin') expect(statuses, where).toContain('403');
      if (spec.body) expect(statuses, `${where} has a body: 413`).toContain('413');
      if (path.includes('{id}')) expect(statuses, `${where} takes an id: 404`).toContain('404');
      for (const status of statuses.filter((text) => Number(text) >= 400)) {
        expect(operation.responses[status]!.content?.['application/json']?.schema, `${where} ${status}`).toEqual({
          $ref: '#/components/schemas/Error',
        });
      }
      for (const status of statuses)
        expect(operation.responses[status]!.description.length, `${where} ${status}`).toBeGreaterThan(0);
    }
    const error = document.components.schemas['Error'] as {
      properties?: { error?: { properties?: { code?: { enum?: string[] } } } };
    };
    expect(error.properties?.error?.properties?.code?.enum).toEqual([...ERROR_CODES]);
  });

  it('each operation documents its path and query parameters and its body', () => {
    for (const { method, path, operation } of operations()) {
      const spec = specOf(operation.operationId);
      const where = `${method} ${path}`;
      const pathNames = [...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((match) => match[1]!);
      const documentedPath = operation.parameters.filter((parameter) => parameter.in === 'path');
      expect(documentedPath.map((parameter) => parameter.name).sort(), where).toEqual([...pathNames].sort());
      for (const parameter of documentedPath) expect(parameter.required, `${where} ${parameter.name}`).toBe(true);
      const queryShape = (spec.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      expect(
        operation.parameters
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => parameter.name)
          .sort(),
        where,
      ).toEqual(Object.keys(queryShape).sort());
      if (spec.body) {
        expect(operation.requestBody?.content['application/json']?.schema, `${where} body`).toBeTypeOf('object');
        expect(operation.requestBody?.required, `${where} body required`).toBe(!spec.body.safeParse(undefined).success);
      } else if (spec.rawBody) {
        expect(operation.requestBody?.content[spec.rawBody.contentType]?.schema, `${where} raw body`).toEqual({
          type: 'string',
          contentMediaType: spec.rawBody.contentType,
        });
        expect(operation.requestBody?.required, `${where} raw body required`).toBe(true);
      } else expect(operation.requestBody, `${where} has no body`).toBeUndefined();
    }
  });
});

describe('GET /docs', () => {
  it('returns HTML listing every documented path and method', async () => {
    const response = await fetch(`${h.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('/docs/openapi.json');
    const rows = [
      ...html.matchAll(
        /<td class="m (\w+)">(\w+)<\/td><td><code>([^<]+)<\/code><\/td><td>[^<]*<\/td><td>([^<]*)<\/td>/g,
      ),
    ].map((match) => ({
      method: match[2]!,
      path: match[3]!,
      statuses: match[4]!.split(' '),
    }));
    const documented = operations();
    expect(rows.map((row) => `${row.method} ${row.path}`).sort()).toEqual(
      documented.map(({ method, path }) => `${method} ${path}`).sort(),
    );
    for (const { method, path, operation } of documented) {
      const row = rows.find((candidate) => candidate.method === method && candidate.path === path)!;
      expect(row.statuses.sort(), `${method} ${path}`).toEqual(Object.keys(operation.responses).sort());
    }
    for (const path of Object.keys(document.paths)) expect(html).toContain(`<code>${path}</code>`);
  });
});
