/** How a named key typed with `is_input` reaches the running process. */
export type KeyAction =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'signal'; readonly signal: 'SIGINT' | 'SIGQUIT' }
  | { readonly kind: 'eof' }
  | { readonly kind: 'unsupported'; readonly reason: string };

const NAMED_KEYS: Readonly<Record<string, string>> = {
  enter: '\n',
  tab: '\t',
  escape: '\x1b',
  esc: '\x1b',
  up: '\x1b[A',
  down: '\x1b[B',
  right: '\x1b[C',
  left: '\x1b[D',
  home: '\x1b[H',
  end: '\x1b[F',
  bspace: '\x7f',
  backspace: '\x7f',
  space: ' ',
};

export const NAMED_KEY_NAMES = [
  'C-c',
  'C-d',
  'C-z',
  'C-\\',
  'C-<letter>',
  'Enter',
  'Tab',
  'Escape',
  'Up',
  'Down',
  'Left',
  'Right',
  'Home',
  'End',
  'BSpace',
] as const;

/**
 * Interpret `is_input` text: a named key (`C-c`, `Enter`, `Up`…) or raw text,
 * which is sent followed by a newline (as if typed and confirmed with Enter).
 */
export function interpretInput(input: string): KeyAction {
  const trimmed = input.trim();
  const control = /^(?:C-|Ctrl[-+])(.)$/i.exec(trimmed);
  if (control !== null) {
    const key = (control[1] ?? '').toLowerCase();
    if (key === 'c') return { kind: 'signal', signal: 'SIGINT' };
    if (key === '\\') return { kind: 'signal', signal: 'SIGQUIT' };
    if (key === 'd') return { kind: 'eof' };
    if (key === 'z') {
      return {
        kind: 'unsupported',
        reason:
          'C-z (suspend) is not supported: this terminal has no job control. Use C-c to interrupt, or run long jobs in the background with `&`.',
      };
    }
    const code = key.charCodeAt(0);
    if (code >= 0x61 && code <= 0x7a) return { kind: 'text', text: String.fromCharCode(code & 0x1f) };
  }
  const named = NAMED_KEYS[trimmed.toLowerCase()];
  if (named !== undefined) return { kind: 'text', text: named };
  return { kind: 'text', text: input.endsWith('\n') ? input : `${input}\n` };
}
