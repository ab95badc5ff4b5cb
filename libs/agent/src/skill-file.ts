/** A skill file: its frontmatter's fields and its body. */
export type SkillFile = {
  readonly attributes: Readonly<Record<string, string | readonly string[]>>;
  readonly body: string;
};

const FENCE = /^---[ \t]*\r?\n/u;
const CLOSING = /\r?\n---[ \t]*(?:\r?\n|$)/u;
const FIELD = /^([A-Za-z_][\w-]*):[ \t]*(.*)$/u;
const ITEM = /^[ \t]+-[ \t]*(.*)$/u;

/**
 * Reads a skill's Markdown: an optional frontmatter between `---` lines, of which this reads the
 * YAML subset skill files use (`key: value`, `key: [a, "b"]`, and `key:` followed by `- item`
 * lines; quotes stripped), and the rest as the body. Anything else in the frontmatter is ignored,
 * never an error: a skill file is the repository's, not ours to refuse.
 */
export function parseSkillFile(text: string): SkillFile {
  const opening = FENCE.exec(text);
  const closing = opening ? CLOSING.exec(text.slice(opening[0].length)) : null;
  if (!opening || !closing) return { attributes: {}, body: text.trim() };
  const header = text.slice(opening[0].length, opening[0].length + closing.index);
  const body = text.slice(opening[0].length + closing.index + closing[0].length);
  const attributes: Record<string, string | string[]> = {};
  let list: string[] | undefined;
  for (const line of header.split(/\r?\n/u)) {
    const item = list ? ITEM.exec(line) : null;
    if (list && item) {
      const value = unquote(item[1]!);
      if (value !== '') list.push(value);
      continue;
    }
    list = undefined;
    const field = FIELD.exec(line);
    if (!field) continue;
    const name = field[1]!;
    const value = field[2]!.trim();
    if (value === '') {
      list = [];
      attributes[name] = list;
    } else if (value.startsWith('[') && value.endsWith(']')) {
      attributes[name] = value
        .slice(1, -1)
        .split(',')
        .map(unquote)
        .filter((entry) => entry !== '');
    } else {
      attributes[name] = unquote(value);
    }
  }
  return { attributes, body: body.trim() };
}

/** A field's text (a list's items joined), or undefined. */
export function textField(file: SkillFile, name: string): string | undefined {
  const value = file.attributes[name];
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value : value.join(', ');
  return text === '' ? undefined : text;
}

/** A field as a list (one value as a list of one). */
export function listField(file: SkillFile, name: string): string[] {
  const value = file.attributes[name];
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : [...value];
}

function unquote(raw: string): string {
  const value = raw.trim();
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0])
    return value.slice(1, -1);
  return value;
}
