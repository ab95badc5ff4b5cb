import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';

/**
 * Errors as the API's body, always `{ error: { code, message } }`, never a 5xx for bad input: a
 * handler's, and a request that matches no route.
 */
export function registerErrorHandlers(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    const api = toApiError(error);
    // the gateway's own 5xx answers (unavailable, secrets_not_configured) are expected; anything else is logged
    if (api.statusCode >= 500 && !(error instanceof ApiError))
      logger.error({ err: error, url: request.url, method: request.method }, 'request failed');
    if (api.retryAfterSeconds !== undefined) void reply.header('retry-after', String(api.retryAfterSeconds));
    void reply.code(api.statusCode).send(api.body());
  });
  app.setNotFoundHandler((request, reply) => {
    void reply
      .code(404)
      .send(new ApiError(404, 'route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`).body());
  });
}

/** Errors fastify raises before routing (bad percent-escapes, over-long parameters) with the API's error body (fastify's `frameworkErrors`). */
export function answerFrameworkError(error: FastifyError, _request: unknown, reply: unknown): void {
  const api =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError(400, 'validation_failed', 'A path parameter is longer than any valid id.')
      : error.code === 'FST_ERR_BAD_URL'
        ? new ApiError(400, 'validation_failed', 'The path is not a valid URL (a malformed percent-escape).')
        : toApiError(error);
  void (reply as FastifyReply).code(api.statusCode).send(api.body());
}

/** fastify's own errors (bad JSON, body too large, wrong content type) as stable API codes. */
function toApiError(error: Error & { statusCode?: number; code?: string }): ApiError {
  if (error instanceof ApiError) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'invalid_json', 'The body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'body_too_large', 'The body is larger than this gateway accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(415, 'unsupported_media_type', 'Send JSON with content-type application/json.');
  }
  if (error instanceof SyntaxError) return new ApiError(400, 'invalid_json', 'The body is not valid JSON.');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError(
      error.statusCode,
      error.statusCode === 404 ? 'route_not_found' : 'validation_failed',
      error.message,
    );
  }
  // the log's and the snapshots' errors say whether they are transient; raw NATS client errors are
  const transient =
    (error as { isRetryable?: unknown }).isRetryable === true ||
    /timeout|disconnect|closed|no responders|connection/i.test(error.message);
  return transient
    ? new ApiError(503, 'unavailable', 'NATS is not reachable right now; retry.', undefined, 1)
    : new ApiError(500, 'internal', 'Internal error; it has been logged.');
}
