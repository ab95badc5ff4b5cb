import type { ErrorBody, ErrorCode } from '@flotilla/api';
import type { z } from 'zod';

/** An error the gateway answers with: an HTTP status, a stable code, a message for people. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly issues?: readonly { path: string; message: string }[],
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  body(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.issues ? { issues: [...this.issues] } : {}) } };
  }

  static notFound(id: string): ApiError {
    return new ApiError(404, 'conversation_not_found', `No conversation "${id}".`);
  }
}

/** A zod failure as a 400 naming each bad field under `where` (body, query, params). */
export function validationError(where: string, error: z.ZodError): ApiError {
  const issues = error.issues.slice(0, 20).map((issue) => ({
    path: [where, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  const first = issues[0];
  return new ApiError(400, 'validation_failed', first ? `${first.path}: ${first.message}` : `invalid ${where}`, issues);
}
