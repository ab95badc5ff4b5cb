/** A NATS setting that cannot work: the message names the variable and what to give instead. */
export class BusConfigError extends Error {
  readonly code = 'bus_config';

  constructor(message: string, options?: ErrorOptions) {
    super(`invalid NATS settings: ${message}`, options);
    this.name = 'BusConfigError';
  }
}

export type UnsupportedServerErrorCode = 'server_too_old' | 'jetstream_unavailable';

/** A nats-server Flotilla cannot run on (too old, or without JetStream): the message says what to do. Not retryable. */
export class UnsupportedServerError extends Error {
  override readonly name = 'UnsupportedServerError';

  constructor(
    readonly code: UnsupportedServerErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
