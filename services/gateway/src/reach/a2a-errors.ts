// The API's answers as A2A's errors: what the gateway's own API refused (through the caller's
// key) becomes the JSON-RPC error a client of A2A expects, with the API's message kept.
import { A2AError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { FlotillaApiError } from '@flotilla/client';

/** The task `id` does not exist for the caller's tenant (or cannot: not a conversation id). */
export function taskNotFound(id: string): A2AError {
  return new TaskNotFoundError(`No task "${id}" (for this API key's tenant).`);
}

/** `error` as an A2A error: a missing conversation is a missing task, bad input is invalid params, a conflict an unsupported operation. */
export function asA2aError(error: unknown, taskId?: string): unknown {
  if (!(error instanceof FlotillaApiError)) return error;
  if (error.status === 404 && error.code === 'conversation_not_found') return taskNotFound(taskId ?? '');
  if (error.status === 400 || error.status === 403 || error.status === 413 || error.status === 415)
    return new RequestMalformedError(error.message);
  if (error.status === 409) return new UnsupportedOperationError(error.message);
  const retry = error.retryAfterSeconds === undefined ? '' : ` (retry in ${error.retryAfterSeconds} s)`;
  return new A2AError(`${error.code}: ${error.message}${retry}`);
}
