export const SchedulesErrorCode = {
  /** The tenant has MAX_SCHEDULES_PER_TENANT schedules already. */
  LimitReached: 'limit_reached',
  /** nats-server refused the schedule's definition (a cron pattern or time zone it does not take). */
  Refused: 'refused',
  /** The stream or bucket could not be created or opened, or refused an operation. */
  StoreUnavailable: 'store_unavailable',
  /** Timeout, disconnect, no responders: the same call may simply be tried again. */
  Unavailable: 'unavailable',
} as const;
export type SchedulesErrorCode = (typeof SchedulesErrorCode)[keyof typeof SchedulesErrorCode];

/** The one error base of @flotilla/schedules. */
export class SchedulesError extends Error {
  override readonly name = 'SchedulesError';
  readonly code: SchedulesErrorCode;

  constructor(code: SchedulesErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }

  /** True when the same call may be tried again as it is. */
  get isRetryable(): boolean {
    return this.code === SchedulesErrorCode.Unavailable;
  }
}
