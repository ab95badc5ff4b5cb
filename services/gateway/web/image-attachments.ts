import type { ImageUpload } from '@flotilla/api';
import { h } from './dom.js';

/** What the gateway takes (it reads the format from the bytes; this only keeps other files out of the picker). */
const ACCEPTED = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/**
 * The images attached to the next message: picked with the composer's file input, shown as chips
 * (each with a button that removes it), sent as base64 with the message and cleared once sent.
 */
export class ImageAttachments {
  #files: File[] = [];

  constructor(
    readonly input: HTMLInputElement,
    readonly list: HTMLElement,
  ) {
    input.accept = ACCEPTED.join(',');
    input.addEventListener('change', () => {
      this.#files.push(...Array.from(input.files ?? []));
      input.value = '';
      this.#render();
    });
  }

  get count(): number {
    return this.#files.length;
  }

  /** The attached images as the API takes them. */
  async uploads(): Promise<ImageUpload[]> {
    return Promise.all(
      this.#files.map(async (file) => ({
        data: base64(new Uint8Array(await file.arrayBuffer())),
        ...(file.name === '' ? {} : { name: file.name.slice(0, 255) }),
      })),
    );
  }

  clear(): void {
    this.#files = [];
    this.#render();
  }

  #render(): void {
    this.list.hidden = this.#files.length === 0;
    this.list.replaceChildren(
      ...this.#files.map((file, index) => {
        const remove = h(
          'button',
          { type: 'button', class: 'chip-remove', title: `Remove ${file.name}`, 'aria-label': `Remove ${file.name}` },
          '×',
        );
        remove.addEventListener('click', () => {
          this.#files.splice(index, 1);
          this.#render();
        });
        return h(
          'li',
          { class: 'attachment', 'data-testid': 'attachment' },
          `${file.name} (${Math.max(1, Math.round(file.size / 1024))} KiB)`,
          remove,
        );
      }),
    );
  }
}

/** Bytes as standard base64, a slice at a time (a spread of megabytes would overflow the call stack). */
function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let start = 0; start < bytes.length; start += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  return btoa(binary);
}
