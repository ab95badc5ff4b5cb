/** A NATS setting that cannot work: the message names the variable and what to give instead. */
export class BusConfigError extends Error {
  readonly code = 'bus_config';

  constructor(message: string, options?: ErrorOptions) {
    super(`invalid NATS settings: ${message}`, options);
    this.name = 'BusConfigError';
  }
}
