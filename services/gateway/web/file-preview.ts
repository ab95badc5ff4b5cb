import type { FileEntry } from '@flotilla/api';
import { byId, h, show } from './dom.js';

/** The most of a file the preview reads (larger ones are for Download). */
export const PREVIEW_MAX_BYTES = 1024 * 1024;

/** Images the preview shows, by extension (no SVG: a picture the agent wrote is never a document). */
const IMAGE_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

/**
 * A workspace file shown in the files panel: an image as itself (a data: URL, which the page's
 * Content-Security-Policy admits), text with its line numbers, anything else (not UTF-8, or
 * holding NUL bytes) named as binary, for Download.
 */
export class FilePreview {
  readonly #view = byId('file-preview');
  readonly #name = byId('file-preview-name');
  readonly #body = byId('file-preview-body');

  constructor() {
    byId('file-preview-close').addEventListener('click', () => this.close());
  }

  show(entry: FileEntry, content: Uint8Array): void {
    this.#name.textContent = entry.path;
    this.#body.replaceChildren(render(entry, content));
    show(this.#view, true);
  }

  close(): void {
    this.#body.replaceChildren();
    show(this.#view, false);
  }
}

function render(entry: FileEntry, content: Uint8Array): HTMLElement {
  const type = IMAGE_TYPES[entry.name.split('.').pop()?.toLowerCase() ?? ''];
  if (type)
    return h('img', {
      class: 'preview-image',
      'data-testid': 'file-preview-image',
      alt: entry.name,
      src: `data:${type};base64,${base64(content)}`,
    });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(content);
  } catch {
    text = '\u0000';
  }
  if (text.includes('\u0000'))
    return h('p', { class: 'muted', 'data-testid': 'file-preview-binary' }, 'A binary file: download it to open it.');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return h(
    'ol',
    { class: 'preview-text', 'data-testid': 'file-preview-text' },
    ...lines.map((line) => h('li', {}, line === '' ? '\u200b' : line)),
  );
}

function base64(content: Uint8Array): string {
  let binary = '';
  for (let at = 0; at < content.length; at += 0x8000)
    binary += String.fromCharCode(...content.subarray(at, at + 0x8000));
  return btoa(binary);
}
