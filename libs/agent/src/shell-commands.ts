import { posix } from 'node:path';

/**
 * One simple command as the security rules read it: its words with quotes and escapes removed,
 * leading variable assignments and shell keywords dropped, the program without its directory
 * (`/bin/rm` is `rm`), and the files its redirections write to.
 */
export type ShellCommand = { readonly words: readonly string[]; readonly writes: readonly string[] };

/** A pipeline: simple commands joined by `|`. */
export type ShellPipeline = readonly ShellCommand[];

/** How deep `$(…)`, `sh -c '…'`, `eval` and wrappers are followed (a command nested deeper is not read). */
const MAX_DEPTH = 8;

/** Words that start a compound command or negate one: the command is what follows them. */
const KEYWORDS: ReadonlySet<string> = new Set([
  '{',
  '}',
  '!',
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'time',
  'coproc',
]);

/**
 * Programs that run the command in their arguments: the flags that take a value (skipped with
 * it), and how many positional words come before the command.
 */
const WRAPPERS: ReadonlyMap<string, { readonly valueFlags: ReadonlySet<string>; readonly positional: number }> =
  new Map(
    Object.entries({
      sudo: {
        flags: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '--user', '--group', '--chdir'],
        positional: 0,
      },
      doas: { flags: ['-u', '-C'], positional: 0 },
      env: { flags: ['-u', '-C', '--unset', '--chdir'], positional: 0 },
      command: { flags: [], positional: 0 },
      builtin: { flags: [], positional: 0 },
      exec: { flags: ['-a'], positional: 0 },
      nohup: { flags: [], positional: 0 },
      nice: { flags: ['-n', '--adjustment'], positional: 0 },
      ionice: { flags: ['-c', '-n', '-p', '-P', '-u'], positional: 0 },
      stdbuf: { flags: ['-i', '-o', '-e'], positional: 0 },
      setsid: { flags: [], positional: 0 },
      timeout: { flags: ['-k', '-s', '--kill-after', '--signal'], positional: 1 },
      chroot: { flags: ['--userspec', '--groups'], positional: 1 },
      xargs: {
        flags: [
          '-a',
          '-d',
          '-E',
          '-e',
          '-I',
          '-i',
          '-L',
          '-l',
          '-n',
          '-P',
          '-s',
          '--delimiter',
          '--max-args',
          '--max-procs',
          '--arg-file',
          '--replace',
        ],
        positional: 0,
      },
      watch: { flags: ['-n', '-d', '--interval'], positional: 0 },
    }).map(([name, { flags, positional }]) => [name, { valueFlags: new Set(flags), positional }]),
  );

const SHELLS: ReadonlySet<string> = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish', 'busybox']);

/**
 * The pipelines of a shell command line, and of every command it runs in turn: in `$(…)`,
 * backticks and `<(…)`, in `sh -c '…'`, `eval …`, and behind wrappers such as `sudo`, `env`,
 * `xargs` or `timeout` (the wrapped command is read as well as the wrapper). A reading, not a
 * shell: variables, aliases, functions and globs are not expanded, so a command built at run
 * time (`$x -rf /`, a script it writes and runs) is not seen.
 */
export function shellPipelines(text: string): ShellPipeline[] {
  const out: ShellPipeline[] = [];
  collect(text, 0, out);
  return out;
}

function collect(text: string, depth: number, out: ShellPipeline[]): void {
  if (depth > MAX_DEPTH) return;
  for (const pipeline of lex(text, depth, out)) {
    const commands = pipeline.map(normalize).filter((command) => command.words.length > 0 || command.writes.length > 0);
    if (commands.length > 0) out.push(commands);
    for (const command of commands) followInner(command, depth, out);
  }
}

/** The commands a command runs: a wrapped command, a shell's `-c` script, an `eval`'s words. */
function followInner(command: ShellCommand, depth: number, out: ShellPipeline[]): void {
  const [program, ...args] = command.words;
  if (program === undefined) return;
  const wrapper = WRAPPERS.get(program);
  if (wrapper) {
    let index = 0;
    let positional = wrapper.positional;
    while (index < args.length) {
      const word = args[index]!;
      if (word === '--') {
        index += 1;
        break;
      }
      if (word.startsWith('-')) {
        if (program === 'env' && (word === '-S' || word.startsWith('--split-string'))) {
          const script = word.includes('=') ? word.slice(word.indexOf('=') + 1) : args[index + 1];
          if (script !== undefined) collect(script, depth + 1, out);
          return;
        }
        index += wrapper.valueFlags.has(word) ? 2 : 1;
      } else if (program === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) index += 1;
      else if (positional > 0) {
        positional -= 1;
        index += 1;
      } else break;
    }
    const inner = args.slice(index);
    if (inner.length > 0) {
      const normalized = normalize({ words: inner, writes: [] });
      if (normalized.words.length > 0) {
        out.push([normalized]);
        followInner(normalized, depth + 1, out);
      }
    }
    return;
  }
  if (SHELLS.has(program) || program === 'su') {
    // -c in any cluster of short flags (`bash -lc '…'`); the script is the next word that is not a flag
    const flagAt = args.findIndex((word) => word === '--command' || /^-[A-Za-z]*c[A-Za-z]*$/.test(word));
    if (flagAt === -1) return;
    const script = args.slice(flagAt + 1).find((word) => !word.startsWith('-'));
    if (script !== undefined) collect(script, depth + 1, out);
    return;
  }
  if (program === 'eval') collect(args.join(' '), depth + 1, out);
}

/** Drops assignments and keywords before the program, and the program's directory. */
function normalize(command: ShellCommand): ShellCommand {
  let start = 0;
  while (start < command.words.length) {
    const word = command.words[start]!;
    if (KEYWORDS.has(word) || /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/.test(word)) start += 1;
    else break;
  }
  const words = command.words.slice(start);
  const program = words[0];
  if (program !== undefined && program.includes('/') && !program.endsWith('/')) words[0] = posix.basename(program);
  return { words, writes: command.writes };
}

type Draft = { words: string[]; writes: string[] };

/**
 * Splits the text into pipelines of simple commands (on newlines, `;`, `&`, `&&`, `||`, `(`, `)`
 * and `|`), removing quotes and escapes; the commands inside `$(…)`, backticks and `<(…)` are
 * collected on their own into `out` (their text stays in the word that holds them).
 */
function lex(text: string, depth: number, out: ShellPipeline[]): ShellCommand[][] {
  const pipelines: ShellCommand[][] = [];
  let pipeline: ShellCommand[] = [];
  let command: Draft = { words: [], writes: [] };
  let word: string | null = null;
  /** What the next word is: an argument, a file written to, or one to skip (input file, heredoc delimiter). */
  let next: 'word' | 'write' | 'skip' = 'word';
  const endWord = (): void => {
    if (word === null) return;
    if (next === 'write') command.writes.push(word);
    else if (next === 'word') command.words.push(word);
    next = 'word';
    word = null;
  };
  const endCommand = (): void => {
    endWord();
    if (command.words.length > 0 || command.writes.length > 0) pipeline.push(command);
    command = { words: [], writes: [] };
  };
  const endPipeline = (): void => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };
  const append = (part: string): void => {
    word = (word ?? '') + part;
  };
  let index = 0;
  while (index < text.length) {
    const char = text[index]!;
    const following = text[index + 1];
    if (char === ' ' || char === '\t' || char === '\r') {
      endWord();
      index += 1;
    } else if (char === '\n' || char === ';' || char === '(' || char === ')') {
      endPipeline();
      index += char === ';' && following === ';' ? 2 : 1;
    } else if (char === '&') {
      if (following === '>') {
        endWord();
        next = 'write';
        index += text[index + 2] === '>' ? 3 : 2;
      } else {
        endPipeline();
        index += following === '&' ? 2 : 1;
      }
    } else if (char === '|') {
      if (following === '|') endPipeline();
      else endCommand();
      index += following === '|' || following === '&' ? 2 : 1;
    } else if (char === '>' || (char === '<' && following !== '(')) {
      // a word of digits just before (2>, 1>>) is the descriptor, not an argument
      if (word !== null && /^\d+$/.test(word)) word = null;
      endWord();
      if (char === '>') {
        index += following === '>' || following === '|' ? 2 : 1;
        if (text[index] === '&') {
          index += 1; // >&2 duplicates a descriptor; >&file writes the file
          next = /\d|-/.test(text[index] ?? '') ? 'skip' : 'write';
        } else next = 'write';
      } else {
        const run = text.startsWith('<<<', index) ? 3 : following === '<' ? 2 : 1;
        index += run;
        if (text[index] === '-') index += 1;
        next = 'skip';
      }
    } else if (char === '#' && word === null) {
      while (index < text.length && text[index] !== '\n') index += 1;
    } else if (char === '\\') {
      if (following !== '\n' && following !== undefined) append(following);
      index += 2;
    } else if (char === "'" || (char === '$' && following === "'")) {
      const open = char === "'" ? index + 1 : index + 2;
      const close = text.indexOf("'", open);
      const end = close === -1 ? text.length : close;
      append(text.slice(open, end));
      index = end + 1;
    } else if (char === '"') {
      index = readDoubleQuoted(text, index + 1, append, depth, out);
    } else if ((char === '$' || char === '<' || char === '>') && following === '(') {
      const end = matchingParen(text, index + 2);
      collect(text.slice(index + 2, end), depth + 1, out);
      append(text.slice(index, Math.min(end + 1, text.length)));
      index = end + 1;
    } else if (char === '`') {
      const end = closingBacktick(text, index + 1);
      collect(text.slice(index + 1, end), depth + 1, out);
      append(text.slice(index, Math.min(end + 1, text.length)));
      index = end + 1;
    } else {
      append(char);
      index += 1;
    }
  }
  endPipeline();
  return pipelines;
}

/** Reads a double-quoted string from `index` (after the quote); returns the index after the closing quote. */
function readDoubleQuoted(
  text: string,
  start: number,
  append: (part: string) => void,
  depth: number,
  out: ShellPipeline[],
): number {
  let index = start;
  let part = '';
  while (index < text.length && text[index] !== '"') {
    const char = text[index]!;
    const following = text[index + 1];
    if (char === '\\' && following !== undefined && '"\\$`\n'.includes(following)) {
      if (following !== '\n') part += following;
      index += 2;
    } else if (char === '$' && following === '(') {
      const end = matchingParen(text, index + 2);
      collect(text.slice(index + 2, end), depth + 1, out);
      part += text.slice(index, Math.min(end + 1, text.length));
      index = end + 1;
    } else if (char === '`') {
      const end = closingBacktick(text, index + 1);
      collect(text.slice(index + 1, end), depth + 1, out);
      part += text.slice(index, Math.min(end + 1, text.length));
      index = end + 1;
    } else {
      part += char;
      index += 1;
    }
  }
  append(part);
  return index + 1;
}

/** The index of the `)` closing a `(` opened just before `start` (quotes skipped), or the text's end. */
function matchingParen(text: string, start: number): number {
  let depth = 1;
  let index = start;
  while (index < text.length) {
    const char = text[index]!;
    if (char === '\\') index += 2;
    else if (char === "'") {
      const close = text.indexOf("'", index + 1);
      index = close === -1 ? text.length : close + 1;
    } else {
      if (char === '(') depth += 1;
      else if (char === ')' && --depth === 0) return index;
      index += 1;
    }
  }
  return text.length;
}

function closingBacktick(text: string, start: number): number {
  let index = start;
  while (index < text.length && text[index] !== '`') index += text[index] === '\\' ? 2 : 1;
  return Math.min(index, text.length);
}

/** The files a simple command writes to, besides its redirections (by what its program is known to do). */
export function commandWrites(command: ShellCommand): string[] {
  const [program, ...args] = command.words;
  const operands = args.filter((word) => !word.startsWith('-'));
  switch (program) {
    case 'tee':
    case 'touch':
    case 'truncate':
    case 'mkdir':
    case 'rm':
    case 'rmdir':
    case 'unlink':
    case 'shred':
      return operands;
    case 'chmod':
    case 'chown':
    case 'chgrp':
      return operands.slice(1);
    case 'cp':
    case 'mv':
    case 'ln':
    case 'install':
    case 'rsync': {
      const target = args.findIndex((word) => word === '-t' || word === '--target-directory');
      if (target !== -1 && args[target + 1] !== undefined) return [args[target + 1]!];
      const joined = args.find((word) => word.startsWith('--target-directory='));
      if (joined) return [joined.slice('--target-directory='.length)];
      return operands.length > 1 ? [operands.at(-1)!] : [];
    }
    case 'dd':
      return args.filter((word) => word.startsWith('of=')).map((word) => word.slice(3));
    case 'sed':
      return args.some((word) => /^-[A-Za-z]*i/.test(word) || word.startsWith('--in-place')) ? operands.slice(1) : [];
    default:
      return [];
  }
}
