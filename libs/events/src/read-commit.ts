import { parseCommit, type Commit } from './commit.js';
import { isValidCommitEnvelope, isValidEvent } from './fast-validation.js';

/**
 * parseCommit for readers: the same rules and errors, with each event checked by the compiled
 * JSON Schema first (several times faster than zod); zod runs only to name what is wrong.
 */
export function readCommit(value: unknown): Commit {
  return parseCommit(value, { isValidEvent, isValidEnvelope: isValidCommitEnvelope });
}
