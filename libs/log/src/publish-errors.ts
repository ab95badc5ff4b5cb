import { ConflictError, LogError, LogErrorCode } from './errors.js';
import type { PublishAnswer } from './jetstream-publisher.js';

const WRONG_LAST_SEQUENCE = 10071;
const WRONG_LAST_SEQUENCE_UNKNOWN = 10164;

/** Maps a publish that JetStream did not acknowledge onto conflict / too large / transient. */
export function classifyPublishAnswer(answer: Exclude<PublishAnswer, { ok: true }>, subject: string): LogError {
  if (answer.kind !== 'refused') {
    const what = answer.kind === 'no_stream' ? 'no stream took it' : 'it did not complete';
    return new LogError(LogErrorCode.Transient, `append to ${subject}: ${what} (${answer.description})`);
  }
  if (answer.errCode === WRONG_LAST_SEQUENCE || answer.errCode === WRONG_LAST_SEQUENCE_UNKNOWN) {
    const match = /(\d+)\s*$/.exec(answer.description);
    return new ConflictError(
      `${subject} moved on since it was read (${answer.description})`,
      match ? Number(match[1]) : undefined,
    );
  }
  if (answer.status === 503 || answer.status === 408) {
    return new LogError(LogErrorCode.Transient, `JetStream busy on ${subject}: ${answer.description}`);
  }
  if (/maximum (payload|message size)/i.test(answer.description)) {
    return new LogError(LogErrorCode.TooLarge, `commit on ${subject} is too large: ${answer.description}`);
  }
  return new LogError(
    LogErrorCode.Transient,
    `JetStream refused a commit on ${subject}: ${answer.description} (error ${answer.errCode || answer.status})`,
  );
}
