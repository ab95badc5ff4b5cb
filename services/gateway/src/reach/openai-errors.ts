// Errors of the OpenAI-compatible endpoint in OpenAI's shape, `{error: {message, type, param, code}}`
// (what OpenAI's SDKs read), whatever raised them: the request's own checks, the gateway's access
// hook and body parser, or the gateway's API the run goes through.
import { FlotillaApiError } from '@flotilla/client';
import { ApiError } from '../api-error.js';

export type OpenAiErrorBody = {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string;
  };
};

/** An answer in OpenAI's error shape, with its HTTP status. */
export class OpenAiError extends Error {
  override readonly name = 'OpenAiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    /** Seconds to wait before retrying (429, 503). */
    readonly retryAfterSeconds?: number,
    /** False once a run started: OpenAI's SDKs retry 409 and 5xx, and a retry would start another run. */
    readonly retryable = true,
  ) {
    super(message);
  }

  static invalid(message: string, param: string | null): OpenAiError {
    return new OpenAiError(400, 'invalid_request', message, param);
  }

  /** This error, not to be retried (`x-should-retry: false`). */
  final(): OpenAiError {
    return new OpenAiError(this.status, this.code, this.message, this.param, this.retryAfterSeconds, false);
  }

  body(): OpenAiErrorBody {
    return { error: { message: this.message, type: typeOf(this.status), param: this.param, code: this.code } };
  }
}

/** OpenAI's `type` for a status (its SDKs pick their error class by the status; the type tells people). */
function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 409) return 'conflict_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** fastify's own errors before the handler (bad JSON, body too large, wrong content type). */
const FRAMEWORK: Readonly<Record<string, { status: number; code: string; message: string }>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The body is not valid JSON.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'invalid_json',
    message: 'The body is empty: send a JSON request.',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: 'body_too_large',
    message: 'The body is larger than this gateway accepts.',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Send JSON with content-type application/json.',
  },
};

/** Any error on this endpoint's routes as an OpenAI-shaped one; `unexpected` says it is a fault to log. */
export function toOpenAiError(error: unknown): { answer: OpenAiError; unexpected: boolean } {
  if (error instanceof OpenAiError) return { answer: error, unexpected: false };
  if (error instanceof ApiError)
    return {
      answer: new OpenAiError(error.statusCode, error.code, error.message, null, error.retryAfterSeconds),
      unexpected: false,
    };
  if (error instanceof FlotillaApiError) {
    // the gateway's own API answered (loopback): its status and code stand, a network fault is ours
    if (error.status === 0 || error.code === 'network_error' || error.code === 'bad_response')
      return {
        answer: new OpenAiError(503, 'unavailable', 'The gateway could not reach its own API; retry.'),
        unexpected: true,
      };
    return {
      answer: new OpenAiError(error.status, error.code, error.message, null, error.retryAfterSeconds),
      unexpected: false,
    };
  }
  const { code, statusCode, name } = (error ?? {}) as { code?: string; statusCode?: number; name?: string };
  const known = code === undefined ? undefined : FRAMEWORK[code];
  if (known) return { answer: new OpenAiError(known.status, known.code, known.message), unexpected: false };
  if (name === 'SyntaxError')
    return { answer: new OpenAiError(400, 'invalid_json', 'The body is not valid JSON.'), unexpected: false };
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500)
    return { answer: new OpenAiError(statusCode, 'invalid_request', (error as Error).message), unexpected: false };
  return { answer: new OpenAiError(500, 'internal', 'Internal error; it has been logged.'), unexpected: true };
}
