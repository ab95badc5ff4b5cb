/**
 * True for failures of the connection or the server (it went away, is starting or shutting
 * down, refused the connection), after which the commit is simply tried again; SQLSTATE classes
 * 08 (connection), 57P (operator intervention) and 53 (insufficient resources).
 */
export function isConnectionError(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^(08|57P|53)/.test(code)) return true;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH)$/.test(code))
    return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}
