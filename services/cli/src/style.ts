/** ANSI styling that is a no-op when colour is off (not a TTY, or NO_COLOR set). */
export type Style = {
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly cyan: (text: string) => string;
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
};

const wrap =
  (open: number, close: number) =>
  (text: string): string =>
    `\u001b[${open}m${text}\u001b[${close}m`;

const plain = (text: string): string => text;

export function createStyle(color: boolean): Style {
  if (!color) return { red: plain, green: plain, yellow: plain, cyan: plain, bold: plain, dim: plain };
  return {
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
    bold: wrap(1, 22),
    dim: wrap(2, 22),
  };
}

/** Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function wantsColor(isTTY: boolean | undefined, env: Readonly<Record<string, string | undefined>>): boolean {
  return isTTY === true && (env['NO_COLOR'] ?? '') === '' && env['TERM'] !== 'dumb';
}
