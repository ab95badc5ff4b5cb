/**
 * PostgreSQL holds neither NUL characters (in text or jsonb) nor unpaired UTF-16 surrogates
 * (jsonb refuses their escapes). Events may carry both (a tool's raw output), so what the sink
 * writes has each replaced by U+FFFD; everything else is stored as the log has it.
 */
const REPLACEMENT = '\uFFFD';
const UNSTORABLE_CHARACTER = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string for a text column. */
export function pgText(value: string): string;
export function pgText(value: string | null | undefined): string | null;
export function pgText(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return value.replace(UNSTORABLE_CHARACTER, REPLACEMENT);
}

// an escape of NUL or of a surrogate, not itself escaped (preceded by an even number of backslashes);
// JSON.stringify writes paired surrogates as characters, so an escaped one is always unpaired
const UNSTORABLE_ESCAPE = /(?<=(?:^|[^\\])(?:\\\\)*)\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g;

/** JSON text for a jsonb parameter. */
export function pgJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes('\\u') ? text.replace(UNSTORABLE_ESCAPE, '\\ufffd') : text;
}
