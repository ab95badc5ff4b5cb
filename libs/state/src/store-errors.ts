import { JetStreamApiError, JetStreamApiCodes } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { StateError, StateErrorCode } from './errors.js';

/** True when a KV create/update lost a compare-and-set: another writer changed the key first. */
export function isRevisionConflict(error: unknown): boolean {
  if (error instanceof JetStreamApiError) {
    return (
      error.code === JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown
    );
  }
  return error instanceof Error && /wrong last sequence/i.test(error.message);
}

/** Turns a KV failure into a StateError that says whether to retry. */
export function classifyStoreError(error: unknown, nc: NatsConnection, what: string): StateError {
  if (error instanceof StateError) return error;
  const message = `${what} failed: ${(error as Error).message}`;
  if (nc.isClosed())
    return new StateError(StateErrorCode.Closed, `${message} (the NATS connection is closed)`, { cause: error });
  if (error instanceof JetStreamApiError) return new StateError(StateErrorCode.StoreFailed, message, { cause: error });
  return new StateError(StateErrorCode.Transient, message, { cause: error });
}
