import { CloseCode } from '@flotilla/api';
import { FlotillaApiError } from '@flotilla/client';

/** A subscription that ended for good, as the error a REST call would have given. */
export function closeError(code: number, reason: string): FlotillaApiError {
  const codes: Partial<Record<number, FlotillaApiError['code']>> = {
    [CloseCode.Unauthorized]: 'unauthorized',
    [CloseCode.NotFound]: 'conversation_not_found',
    [CloseCode.BadFrame]: 'invalid_json',
    [CloseCode.MessageTooBig]: 'body_too_large',
    [CloseCode.TooManySubscribers]: 'too_many_subscribers',
  };
  return new FlotillaApiError(
    0,
    codes[code] ?? 'unavailable',
    `the event stream closed (${code}${reason === '' ? '' : ` ${reason}`})`,
  );
}
