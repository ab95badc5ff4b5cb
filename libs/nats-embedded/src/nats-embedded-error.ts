export const NatsEmbeddedErrorCode = {
  /** No nats-server binary on PATH (or NATS_SERVER_BIN). */
  binaryNotFound: 'binary_not_found',
  /** A nats-server exited or stayed silent before it printed "Server is ready". */
  startFailed: 'start_failed',
  /** A condition polled on the monitoring endpoints did not hold before its deadline. */
  timedOut: 'timed_out',
  /** A node index outside the cluster, or an argument that cannot work. */
  invalidArgument: 'invalid_argument',
} as const;
export type NatsEmbeddedErrorCode = (typeof NatsEmbeddedErrorCode)[keyof typeof NatsEmbeddedErrorCode];

export class NatsEmbeddedError extends Error {
  override readonly name = 'NatsEmbeddedError';

  constructor(
    readonly code: NatsEmbeddedErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
