import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The browser UI's sources: index.html, styles.css and app.ts (bundled here at start-up). */
const WEB_DIR = new URL('../web/', import.meta.url);

/** Paths the UI answers on; none needs an API key (the page asks for one and sends it to /v1). */
export const WEB_UI_PATHS = { page: '/', script: '/ui/app.js', styles: '/ui/styles.css' } as const;

/** The page may load only its own script and styles, and talk only to its own origin. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

type Asset = {
  readonly body: Buffer;
  /** Absent when compressing would not pay. */
  readonly gzip: Buffer | undefined;
  readonly contentType: string;
  /** A content hash: the strong ETag and the `?v=` that makes a URL immutable. */
  readonly version: string;
};

/**
 * Serves the web UI: `GET /` (the page), `GET /ui/app.js` (app.ts and @flotilla/client, bundled
 * in memory with esbuild when this is called) and `GET /ui/styles.css`. The page links its assets
 * with `?v=<content hash>`, so browsers cache those for a year and revalidate only the page.
 */
export async function registerWebUi(app: FastifyInstance): Promise<void> {
  const [script, styles, html] = await Promise.all([bundleScript(), readWeb('styles.css'), readWeb('index.html')]);
  const scriptAsset = asset(Buffer.from(script), 'text/javascript; charset=utf-8');
  const stylesAsset = asset(styles, 'text/css; charset=utf-8');
  const page = asset(
    Buffer.from(
      linkVersions(html.toString('utf8'), { 'ui/app.js': scriptAsset.version, 'ui/styles.css': stylesAsset.version }),
    ),
    'text/html; charset=utf-8',
  );

  app.get(WEB_UI_PATHS.page, (request, reply) => {
    void reply
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer');
    send(request, reply, page, 'no-cache');
  });
  app.get(WEB_UI_PATHS.script, (request, reply) => {
    send(request, reply, scriptAsset, cacheControlFor(request, scriptAsset));
  });
  app.get(WEB_UI_PATHS.styles, (request, reply) => {
    send(request, reply, stylesAsset, cacheControlFor(request, stylesAsset));
  });
}

async function bundleScript(): Promise<Uint8Array> {
  const entry = fileURLToPath(new URL('app.ts', WEB_DIR));
  try {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      platform: 'browser',
      format: 'esm',
      target: 'es2022',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    });
    const output = result.outputFiles[0];
    if (!output) throw new Error('esbuild produced no output');
    return output.contents;
  } catch (error) {
    throw new Error(`the web UI could not be bundled from ${entry}: ${(error as Error).message}`, { cause: error });
  }
}

function readWeb(name: string): Promise<Buffer> {
  return readFile(new URL(name, WEB_DIR));
}

function asset(body: Buffer, contentType: string): Asset {
  const gzip = body.length >= 1024 ? gzipSync(body, { level: 9 }) : undefined;
  return {
    body,
    gzip: gzip && gzip.length < body.length ? gzip : undefined,
    contentType,
    version: createHash('sha256').update(body).digest('base64url').slice(0, 16),
  };
}

/** `href="ui/app.js"` → `href="ui/app.js?v=<hash>"`; fails loudly if the page stopped linking an asset. */
function linkVersions(html: string, versions: Record<string, string>): string {
  let linked = html;
  for (const [path, version] of Object.entries(versions)) {
    const attribute = new RegExp(`(src|href)="${path.replace(/[.]/g, '\\.')}"`);
    if (!attribute.test(linked)) throw new Error(`web/index.html does not link ${path}`);
    linked = linked.replace(attribute, `$1="${path}?v=${version}"`);
  }
  return linked;
}

/** A versioned URL of the current content never changes; anything else is revalidated. */
function cacheControlFor(request: FastifyRequest, served: Asset): string {
  const { v } = request.query as { v?: unknown };
  return v === served.version ? 'public, max-age=31536000, immutable' : 'no-cache';
}

/** Handlers answer synchronously through `reply` (fastify sends nothing more for them). */
function send(request: FastifyRequest, reply: FastifyReply, served: Asset, cacheControl: string): void {
  const etag = `"${served.version}"`;
  void reply
    .header('cache-control', cacheControl)
    .header('etag', etag)
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff')
    .type(served.contentType);
  if (matchesEtag(request.headers['if-none-match'], etag)) void reply.code(304).send();
  else if (served.gzip && acceptsGzip(request.headers['accept-encoding']))
    void reply.header('content-encoding', 'gzip').send(served.gzip);
  else void reply.send(served.body);
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(',').some((part) => {
    const [coding, ...parameters] = part.trim().split(';');
    if (coding?.trim().toLowerCase() !== 'gzip') return false;
    const quality = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith('q='));
    return quality === undefined || Number(quality.slice(2)) > 0;
  });
}
