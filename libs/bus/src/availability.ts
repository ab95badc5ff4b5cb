import { JetStreamApiError } from '@nats-io/jetstream';
import {
  AuthorizationError,
  ConnectionError,
  NoRespondersError,
  PermissionViolationError,
  TimeoutError,
} from '@nats-io/transport-node';

/** JetStream API codes that mean "not now" in a cluster: no meta leader yet, no peers to place on yet. */
const CLUSTER_NOT_AVAILABLE = 10008;
const NO_SUITABLE_PEERS = 10005;
const SERVICE_UNAVAILABLE = 503;
const STREAM_NAME_IN_USE = 10058;
/** What nats-server 2.9 answers, instead of "name in use", to the second of two racing creations of one stream. */
const STREAM_SUBJECTS_OVERLAP = 10065;

/**
 * True for the refusal of a stream's (or bucket's) creation that another instance may have won
 * meanwhile: open or look it up instead. Were the overlap another stream's, that look-up fails
 * and says so.
 */
export function isLostCreationRace(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError && (error.code === STREAM_NAME_IN_USE || error.code === STREAM_SUBJECTS_OVERLAP)
  );
}

/**
 * True for a failure that the same call may outlive: a timeout, no responders (a stream or bucket
 * whose leader is being elected, a node restarting), a lost connection, JetStream's "temporarily
 * unavailable". False for what retrying cannot fix: a refused permission, a bad request, an
 * account without JetStream.
 */
export function isTransientNatsError(error: unknown): boolean {
  // the first decisive error along the cause chain decides (wrappers such as a LogError or
  // nats.js' RequestError and JetStreamNotEnabled, which is what it calls "no responders" to a
  // JetStream request, pass the question on to their cause)
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth += 1) {
    if (cause instanceof TimeoutError || cause instanceof NoRespondersError || cause instanceof ConnectionError)
      return true;
    if (cause instanceof JetStreamApiError)
      return (
        cause.code === CLUSTER_NOT_AVAILABLE || cause.code === NO_SUITABLE_PEERS || cause.status === SERVICE_UNAVAILABLE
      );
    if (cause instanceof PermissionViolationError || cause instanceof AuthorizationError) return false;
  }
  return false;
}

export type WhileUnavailableOptions = {
  /** Give up (rethrowing the last failure) after this long. Default 60 s. */
  readonly deadlineMs?: number;
  /** Told before each wait. */
  readonly onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
};

const FIRST_WAIT_MS = 100;
const LONGEST_WAIT_MS = 2_000;

/**
 * Runs `call` until it succeeds, waiting (100 ms, doubling to 2 s) after each transient failure
 * (isTransientNatsError) until the deadline. Any other failure is thrown at once. For start-up
 * and other calls that may wait out a leader election or a node's restart; `call` must be safe to
 * repeat.
 */
export async function whileUnavailable<T>(call: () => Promise<T>, options: WhileUnavailableOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.deadlineMs ?? 60_000);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const waitMs = Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** (attempt - 1));
      if (!isTransientNatsError(error) || Date.now() + waitMs > deadline) throw error;
      options.onRetry?.(error, attempt, waitMs);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
