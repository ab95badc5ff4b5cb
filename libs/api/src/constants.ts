/**
 * Plain constants of the API (no schema code), for clients that must stay small (the web UI's
 * bundle): paths, headers and the WebSocket close codes.
 */

/**
 * Flotilla's release version: the gateway reports it (`GET /v1/info`, the OpenAPI document), the
 * CLI prints it (`flotilla --version`) and the packages and the chart's appVersion carry it (a
 * test keeps the package.json files and Chart.yaml equal to it).
 */
export const FLOTILLA_VERSION = '0.1.0';

/** Every REST route lives under this prefix; the WebSocket shares the events path. */
export const API_PREFIX = '/v1';
/** Alternative to `Authorization: Bearer <key>`. */
export const API_KEY_HEADER = 'x-api-key';

/** WebSocket close codes the gateway uses (4000-4999 are application codes). */
export const CloseCode = {
  /** The gateway is shutting down: reconnect (to any gateway) with after_seq. */
  GoingAway: 1001,
  /** An inbound frame over the size limit (the WebSocket standard's code). */
  MessageTooBig: 1009,
  /** No valid API key in the header or the first frame. */
  Unauthorized: 4001,
  /** A bad request: invalid conversation id or after_seq. */
  BadFrame: 4002,
  /** The conversation does not exist (for this tenant). */
  NotFound: 4004,
  /** The client did not read fast enough: its buffer filled up. Reconnect with after_seq. */
  SlowConsumer: 4008,
  /** The per-conversation subscriber limit of this gateway is reached. */
  TooManySubscribers: 4029,
  /** The log could not be read (NATS unreachable): reconnect later with after_seq. */
  Unavailable: 4503,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
