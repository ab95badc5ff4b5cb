import { JetStreamApiError, JetStreamError } from '@nats-io/jetstream';
import { errors, RequestError } from '@nats-io/transport-node';
import { ConflictError, LogError, LogErrorCode } from './errors.js';

const WRONG_LAST_SEQUENCE = 10071;
const WRONG_LAST_SEQUENCE_UNKNOWN = 10164;

/** Maps a JetStream publish failure onto conflict / transient / other. */
export function classifyPublishError(error: unknown, subject: string): LogError {
  if (error instanceof LogError) return error;
  if (error instanceof JetStreamApiError) {
    if (error.code === WRONG_LAST_SEQUENCE || error.code === WRONG_LAST_SEQUENCE_UNKNOWN) {
      const match = /(\d+)\s*$/.exec(error.message);
      return new ConflictError(`${subject} moved on since it was read (${error.message})`, match ? Number(match[1]) : undefined, { cause: error });
    }
    if (error.status === 503 || error.status === 408) {
      return new LogError(LogErrorCode.Transient, `JetStream busy on ${subject}: ${error.message}`, { cause: error });
    }
    if (/maximum (payload|message size)/i.test(error.message)) {
      return new LogError(LogErrorCode.TooLarge, `commit on ${subject} is too large: ${error.message}`, { cause: error });
    }
    return new LogError(LogErrorCode.Transient, `JetStream refused a commit on ${subject}: ${error.message}`, { cause: error });
  }
  if (
    error instanceof errors.TimeoutError ||
    error instanceof errors.ClosedConnectionError ||
    error instanceof errors.DrainingConnectionError ||
    error instanceof errors.ConnectionError ||
    (error instanceof JetStreamError && /not enabled/i.test(error.message)) ||
    error instanceof RequestError
  ) {
    return new LogError(LogErrorCode.Transient, `append to ${subject} did not complete: ${(error as Error).message}`, { cause: error });
  }
  return new LogError(LogErrorCode.Transient, `append to ${subject} failed: ${(error as Error).message}`, { cause: error });
}
