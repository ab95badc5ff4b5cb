import * as AnthropicSdk from '@anthropic-ai/sdk';
import * as OpenAISdk from 'openai';
import { isContextOverflowMessage } from './context-overflow.js';
import { LlmError, type LlmErrorCode } from './errors.js';
import { ResponseTooLargeError } from './http-fetch.js';
import { parseRetryAfterMs } from './retry-after.js';

type ApiErrorLike = {
  readonly status?: number;
  readonly headers?: { get(name: string): string | null | undefined };
  readonly error?: unknown;
  readonly message: string;
  readonly name: string;
};

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/** Turns whatever an SDK threw into an LlmError with a stable code and retryability. */
export function classifyError(error: unknown, provider: string): LlmError {
  if (error instanceof LlmError) return error;
  if (!(error instanceof Error))
    return new LlmError('unknown', `${provider} call failed: ${String(error)}`, { provider });
  const apiError = error as Error & ApiErrorLike;
  if (isAny(error, OpenAISdk.APIUserAbortError, AnthropicSdk.APIUserAbortError) || error.name === 'AbortError') {
    return new LlmError('cancelled', `${provider} call was aborted.`, { provider, cause: error });
  }
  if (isAny(error, OpenAISdk.APIConnectionTimeoutError, AnthropicSdk.APIConnectionTimeoutError)) {
    return new LlmError('timeout', `${provider} request timed out.`, { provider, cause: error });
  }
  const tooLarge = causeOf(error, ResponseTooLargeError);
  if (tooLarge) {
    return new LlmError('reply_too_large', `${provider} sent a reply that ${tooLarge.message}: refused, not retried.`, {
      provider,
      cause: error,
    });
  }
  if (error instanceof SyntaxError) {
    return new LlmError('malformed_response', `${provider} sent data that is not valid JSON: ${error.message}`, {
      provider,
      cause: error,
    });
  }
  if (isAny(error, OpenAISdk.APIConnectionError, AnthropicSdk.APIConnectionError) || isNetworkError(error)) {
    return new LlmError('transient', `Connection to ${provider} failed: ${describe(error)}`, {
      provider,
      cause: error,
    });
  }
  if (apiError.headers !== undefined || typeof apiError.status === 'number' || 'error' in apiError) {
    return fromApiError(apiError, provider);
  }
  return new LlmError('unknown', `${provider} call failed: ${error.message}`, { provider, cause: error });
}

/** The first error of this class along the cause chain. */
function causeOf<T extends Error>(error: Error, type: new (...args: never[]) => T): T | undefined {
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth += 1)
    if (cause instanceof type) return cause;
  return undefined;
}

function fromApiError(error: Error & ApiErrorLike, provider: string): LlmError {
  const status = error.status;
  const text = `${error.message} ${safeStringify(error.error)}`;
  const code = codeFor(status, text);
  const retryAfterMs = parseRetryAfterMs(error.headers);
  const hint = HINTS[code] ?? '';
  return new LlmError(code, `${provider} ${status ?? 'stream'} error: ${error.message}${hint}`, {
    provider,
    cause: error,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

function codeFor(status: number | undefined, text: string): LlmErrorCode {
  if (/insufficient_quota|billing|credit balance|exceeded your current quota/i.test(text)) return 'quota';
  const mayBeOverflow = status === undefined || status === 400 || status === 413 || status === 422 || status >= 500;
  if (mayBeOverflow && (isContextOverflowMessage(text) || status === 413)) return 'context_window_exceeded';
  switch (status) {
    case 400:
    case 422:
      return /content[_ ]?(?:filter|policy|management)|safety system/i.test(text) ? 'content_filter' : 'bad_request';
    case 401:
      return 'auth';
    case 402:
      return 'quota';
    case 403:
      return 'permission';
    case 404:
      return 'not_found';
    case 408:
      return 'timeout';
    case 409:
    case 425:
      return 'transient';
    case 429:
      return 'rate_limit';
    case undefined:
      return streamErrorCode(text);
    default:
      return status >= 500 ? 'transient' : 'unknown';
  }
}

/** Errors sent inside an SSE stream carry no status; classify by their error type. */
function streamErrorCode(text: string): LlmErrorCode {
  if (/rate_limit/i.test(text)) return 'rate_limit';
  if (/overloaded|api_error|server_error|internal|timeout|unavailable/i.test(text)) return 'transient';
  if (/authentication/i.test(text)) return 'auth';
  if (/permission/i.test(text)) return 'permission';
  if (/invalid_request/i.test(text)) return 'bad_request';
  return 'unknown';
}

const HINTS: Partial<Record<LlmErrorCode, string>> = {
  auth: ' (check the API key)',
  context_window_exceeded: ' (condense the conversation and retry)',
  quota: ' (the account has no quota left; retrying will not help)',
};

function isAny(error: Error, ...classes: (abstract new (...args: never[]) => Error)[]): boolean {
  return classes.some((errorClass) => error instanceof errorClass);
}

function isNetworkError(error: Error): boolean {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    if (/^terminated$|other side closed|socket hang up|fetch failed/i.test(current.message)) return true;
  }
  return false;
}

function describe(error: Error): string {
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.message}${cause}`;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/** An error object delivered inside a stream (Responses `error` / `response.failed`, Anthropic `error`). */
export function streamFailure(provider: string, body: unknown): LlmError {
  const record = (typeof body === 'object' && body !== null ? body : {}) as { message?: unknown };
  const message = typeof record.message === 'string' ? record.message : 'the stream reported an error';
  return new LlmError(codeFor(undefined, `${message} ${safeStringify(body)}`), `${provider} stream error: ${message}`, {
    provider,
    cause: body,
  });
}
