import { MIN_SECRET_VALUE_CHARS } from './secret-rules.js';

/** Lines of a multi-line value shorter than this are not masked on their own (too common). */
const MIN_LINE_CHARS = 8;

export type Needle = { readonly text: string; readonly name: string };
type Occurrence = { readonly start: number; readonly end: number; readonly name: string };

/**
 * Replaces every occurrence of each value in `text` by `<secret:NAME>`. Besides the value as it
 * is, it masks the forms a value commonly leaks in: its base64 and base64url (of its UTF-8,
 * padding left out, so `echo -n $X | base64` is caught), its JSON string escaping, its CRLF form
 * (a terminal turns `\n` into `\r\n`), each line of 8 or more characters of a multi-line value
 * (`head -3 key.pem`), and what one shell command makes of it (MaskedForms: base64 at any offset,
 * hex, reversed, case-changed, URL-escaped). Occurrences that overlap are masked together (no fragment of either is
 * left), a value inside a longer one is masked as the longer one, and a value two names share is
 * shown under the first name in sorted order. Values shorter than 4 characters (which a store
 * never holds) are ignored, not masked everywhere.
 */
export function maskSecrets(
  text: string,
  secrets: Readonly<Record<string, string>>,
  forms: MaskedForms = 'encodings',
  search: MaskSearch = 'auto',
): string {
  const needles = needlesOf(secrets, forms);
  if (needles.length === 0 || text.length === 0) return text;
  const occurrences =
    search === 'per-needle' || text.length < ONE_PASS_FROM_CHARS ? eachNeedle(text, needles) : onePass(text, needles);
  if (occurrences.length === 0) return text;
  // by start, longest first: a run of overlapping occurrences becomes one masked range
  occurrences.sort((a, b) => a.start - b.start || b.end - a.end);
  let output = '';
  let position = 0;
  for (let index = 0; index < occurrences.length;) {
    const first = occurrences[index]!;
    let end = first.end;
    const labels = [first.name];
    let covered = first.end; // the end of the last occurrence that shows a label
    for (index += 1; index < occurrences.length && occurrences[index]!.start < end; index += 1) {
      const next = occurrences[index]!;
      if (next.end <= covered) continue; // inside one already shown: masked as the longer one
      if (labels[labels.length - 1] !== next.name) labels.push(next.name);
      covered = next.end;
      end = Math.max(end, next.end);
    }
    output += text.slice(position, first.start) + labels.map((name) => `<secret:${name}>`).join('');
    position = end;
  }
  return output + text.slice(position);
}

/**
 * How the text is searched: `per-needle`, one scan of the text for each needle (cheapest on short
 * texts); `auto`, that below ONE_PASS_FROM_CHARS and one scan for every needle at once above it.
 */
export type MaskSearch = 'auto' | 'per-needle';

/**
 * From this length on, one regular expression of every needle (V8 scans the text once for all of
 * them) beats a scan per needle, whose cost grows with the forms masked (`npm run bench -- masking`).
 */
const ONE_PASS_FROM_CHARS = 32 * 1024;

function eachNeedle(text: string, needles: readonly Needle[]): Occurrence[] {
  const occurrences: Occurrence[] = [];
  for (const needle of needles) {
    for (let at = text.indexOf(needle.text); at !== -1; at = text.indexOf(needle.text, at + 1)) {
      occurrences.push({ start: at, end: at + needle.text.length, name: needle.name });
    }
  }
  return occurrences;
}

/**
 * The longest needle at each position where one starts (needles come longest first, and an
 * alternation takes its first match): a shorter one starting there lies inside it, and is masked
 * as the longer one anyway. Each search resumes one character after the last match's start, so
 * overlapping occurrences are all found.
 */
function onePass(text: string, needles: readonly Needle[]): Occurrence[] {
  const names = new Map(needles.map((needle) => [needle.text, needle.name]));
  const pattern = new RegExp(
    needles.map((needle) => needle.text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')).join('|'),
    'g',
  );
  const occurrences: Occurrence[] = [];
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    occurrences.push({ start: match.index, end: match.index + match[0].length, name: names.get(match[0])! });
    pattern.lastIndex = match.index + 1;
  }
  return occurrences;
}

/** Encoded forms shorter than this are not masked (a few characters of base64 or hex would match too much). */
const MIN_ENCODED_CHARS = 8;

/**
 * The forms of a value masked besides the value itself: `anchored` are the forms masked from the
 * start (base64 and base64url of the value alone, JSON escaping, CRLF, long lines); `encodings` adds
 * what one shell command makes of a value: base64 and base64url at any offset in a longer text
 * (`base64` of "x"+value, `echo $S | base64`), hex in either case, reversed, upper- and
 * lower-cased, URL-escaped.
 */
export type MaskedForms = 'anchored' | 'encodings';

/** Every text to mask and the name it is shown as, longest first, each text once. */
export function needlesOf(secrets: Readonly<Record<string, string>>, forms: MaskedForms = 'encodings'): Needle[] {
  const byText = new Map<string, string>();
  const add = (value: string, name: string, minimum = MIN_SECRET_VALUE_CHARS): void => {
    if (value.length >= minimum && !byText.has(value)) byText.set(value, name);
  };
  for (const name of Object.keys(secrets).sort()) {
    const value = secrets[name];
    if (typeof value !== 'string' || value.length < MIN_SECRET_VALUE_CHARS) continue;
    add(value, name);
    const bytes = Buffer.from(value, 'utf8');
    add(bytes.toString('base64').replace(/=+$/, ''), name);
    add(bytes.toString('base64url'), name);
    add(JSON.stringify(value).slice(1, -1), name);
    if (value.includes('\n')) {
      add(value.replace(/\r?\n/g, '\r\n'), name);
      for (const line of value.split(/\r?\n/)) add(line.trim(), name, MIN_LINE_CHARS);
    }
    if (forms === 'anchored') continue;
    for (const core of base64Cores(bytes)) {
      add(core, name, MIN_ENCODED_CHARS);
      add(core.replaceAll('+', '-').replaceAll('/', '_'), name, MIN_ENCODED_CHARS);
    }
    add(bytes.toString('hex'), name, MIN_ENCODED_CHARS);
    add(bytes.toString('hex').toUpperCase(), name, MIN_ENCODED_CHARS);
    add([...value].reverse().join(''), name);
    add(value.toUpperCase(), name);
    add(value.toLowerCase(), name);
    add(encodeURIComponent(value), name);
  }
  return [...byText].map(([text, name]) => ({ text, name })).sort((a, b) => b.text.length - a.text.length);
}

/**
 * The part of the value's base64 that the value alone decides, at each of the three offsets it
 * may start at in a longer text: the characters that mix in bytes before it (two at offset 1,
 * three at offset 2) and after it (a last group left incomplete) are left out.
 */
function base64Cores(bytes: Buffer): string[] {
  const skip = [0, 2, 3];
  return [0, 1, 2].map((offset) => {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    return encoded.slice(skip[offset], 4 * Math.floor((offset + bytes.length) / 3));
  });
}
