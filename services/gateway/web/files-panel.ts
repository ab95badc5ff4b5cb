import type { FileEntry, GitDiff, GitStatus } from '@flotilla/api';
import { FlotillaApiError, type FlotillaClient } from '@flotilla/client';
import { byId, h, show } from './dom.js';
import { FilePreview, PREVIEW_MAX_BYTES } from './file-preview.js';
import { bytes } from './format.js';

export type FilesPanelHooks = {
  /** A request failed: tell the user. */
  onError(error: unknown): void;
};

/**
 * The open conversation's workspace: one folder at a time (click a folder to open it, Up to go
 * back), a file's Download, an Upload of files from this computer into the folder shown, and
 * the git diff of the repository holding that folder, and a preview of a text file or image. Everything goes through the gateway's
 * files routes (the tool runner that owns the workspace answers, confined to it).
 */
export class FilesPanel {
  readonly #panel = byId<HTMLDetailsElement>('files-panel');
  readonly #where = byId('files-path');
  readonly #list = byId<HTMLUListElement>('files-list');
  readonly #note = byId('files-note');
  readonly #up = byId<HTMLButtonElement>('files-up');
  readonly #upload = byId<HTMLInputElement>('files-upload');
  readonly #diffButton = byId<HTMLButtonElement>('files-diff');
  readonly #diffView = byId('diff-view');
  readonly #diffSummary = byId('diff-summary');
  readonly #diffStatus = byId<HTMLUListElement>('diff-status');
  readonly #diffText = byId('diff-text');
  readonly #filePreview = new FilePreview();

  #id: string | undefined;
  #path = '';
  /** Answers for a conversation or folder no longer shown are dropped. */
  #generation = 0;

  constructor(
    readonly client: () => FlotillaClient,
    readonly hooks: FilesPanelHooks,
  ) {
    // the workspace is asked for only once the panel is opened
    this.#panel.addEventListener('toggle', () => {
      if (this.#panel.open) void this.refresh();
    });
    byId('files-refresh').addEventListener('click', () => void this.refresh());
    this.#up.addEventListener('click', () => this.#go(parentOf(this.#path)));
    this.#upload.addEventListener('change', () => void this.#uploadChosen());
    this.#diffButton.addEventListener('click', () => void this.#showDiff());
    byId('diff-close').addEventListener('click', () => show(this.#diffView, false));
  }

  open(id: string): void {
    this.#id = id;
    this.#path = '';
    this.#generation += 1;
    this.#list.replaceChildren();
    show(this.#diffView, false);
    this.#filePreview.close();
    this.#showNote(undefined);
    this.#renderPath();
    if (this.#panel.open) void this.refresh();
  }

  close(): void {
    this.#id = undefined;
    this.#generation += 1;
  }

  /** Lists the folder shown again (after an upload here or elsewhere: a workspace_file event). */
  async refresh(): Promise<void> {
    const id = this.#id;
    if (!id || !this.#panel.open) return;
    const generation = ++this.#generation;
    const path = this.#path;
    try {
      const listing = await this.client().listFiles(id, path);
      if (generation !== this.#generation) return;
      this.#render(listing.entries, listing.truncated);
    } catch (error) {
      if (generation !== this.#generation) return;
      // a folder that went away: back to the root
      if (
        error instanceof FlotillaApiError &&
        (error.code === 'file_not_found' || error.code === 'not_a_directory') &&
        path !== ''
      )
        return this.#go('');
      this.#list.replaceChildren();
      this.#showNote(error instanceof FlotillaApiError ? error.message : 'The workspace could not be listed.');
      if (!(error instanceof FlotillaApiError) || error.status >= 500) this.hooks.onError(error);
    }
  }

  #go(path: string): void {
    this.#path = path;
    show(this.#diffView, false);
    this.#renderPath();
    void this.refresh();
  }

  #renderPath(): void {
    this.#where.textContent = `/workspace${this.#path ? `/${this.#path}` : ''}`;
    this.#up.disabled = this.#path === '';
  }

  #render(entries: readonly FileEntry[], truncated: boolean): void {
    this.#list.replaceChildren(...entries.map((entry) => this.#row(entry)));
    this.#showNote(
      entries.length === 0 ? 'This folder is empty.' : truncated ? 'Only the first entries are listed.' : undefined,
    );
  }

  #row(entry: FileEntry): HTMLLIElement {
    const item = h('li', { 'data-testid': 'file-entry', 'data-name': entry.name, 'data-type': entry.type });
    if (entry.type === 'directory') {
      const open = h(
        'button',
        { type: 'button', class: 'link-button file-name', 'data-testid': 'file-open' },
        `${entry.name}/`,
      );
      open.addEventListener('click', () => this.#go(entry.path));
      item.append(open);
    } else {
      item.append(h('span', { class: 'file-name' }, entry.name));
    }
    if (entry.type === 'symlink')
      item.append(h('span', { class: 'muted', title: 'A symbolic link' }, `→ ${entry.link_target ?? '?'}`));
    if (entry.size !== null) item.append(h('span', { class: 'muted file-size' }, bytes(entry.size)));
    if (entry.type === 'file') {
      const download = h(
        'button',
        {
          type: 'button',
          class: 'link-button',
          'data-testid': 'file-download',
          'aria-label': `Download ${entry.name}`,
        },
        'Download',
      );
      download.addEventListener('click', () => void this.#download(entry));
      if (entry.size !== null && entry.size <= PREVIEW_MAX_BYTES) {
        const preview = h(
          'button',
          {
            type: 'button',
            class: 'link-button',
            'data-testid': 'file-preview-open',
            'aria-label': `Preview ${entry.name}`,
          },
          'Preview',
        );
        preview.addEventListener('click', () => void this.#preview(entry));
        item.append(preview);
      }
      item.append(download);
    }
    return item;
  }

  async #preview(entry: FileEntry): Promise<void> {
    const id = this.#id;
    const generation = this.#generation;
    if (!id) return;
    try {
      const content = await this.client().downloadFile(id, entry.path);
      if (generation === this.#generation) this.#filePreview.show(entry, content);
    } catch (error) {
      this.hooks.onError(error);
    }
  }

  async #download(entry: FileEntry): Promise<void> {
    const id = this.#id;
    if (!id) return;
    try {
      const content = await this.client().downloadFile(id, entry.path);
      const url = URL.createObjectURL(new Blob([new Uint8Array(content)], { type: 'application/octet-stream' }));
      const link = h('a', { href: url, download: entry.name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (error) {
      this.hooks.onError(error);
    }
  }

  async #uploadChosen(): Promise<void> {
    const id = this.#id;
    const chosen = [...(this.#upload.files ?? [])];
    this.#upload.value = '';
    if (!id || chosen.length === 0) return;
    const folder = this.#path;
    for (const file of chosen) {
      try {
        this.#showNote(`Uploading ${file.name}…`);
        await this.client().uploadFile(id, folder ? `${folder}/${file.name}` : file.name, file);
      } catch (error) {
        this.hooks.onError(error);
      }
    }
    this.#showNote(undefined);
    if (this.#id === id) await this.refresh();
  }

  /** The git status and diff of the repository holding the folder shown. */
  async #showDiff(): Promise<void> {
    const id = this.#id;
    if (!id) return;
    const generation = this.#generation;
    const path = this.#path;
    this.#diffButton.disabled = true;
    try {
      const [status, diff] = await Promise.all([this.client().gitStatus(id, path), this.client().gitDiff(id, path)]);
      if (generation !== this.#generation) return;
      this.#renderDiff(status, diff);
    } catch (error) {
      if (generation !== this.#generation) return;
      if (error instanceof FlotillaApiError && error.status < 500) {
        this.#diffStatus.replaceChildren();
        this.#diffText.replaceChildren();
        this.#diffSummary.textContent = error.message;
        show(this.#diffView, true);
      } else this.hooks.onError(error);
    } finally {
      this.#diffButton.disabled = false;
    }
  }

  #renderDiff(status: GitStatus, diff: GitDiff): void {
    const branch = status.branch.head ?? 'detached HEAD';
    const where = status.repository_root ? `/workspace/${status.repository_root}` : '/workspace';
    this.#diffSummary.textContent = `${where} on ${branch}: ${status.entries.length} changed${status.truncated ? ' (at least)' : ''}${diff.base === 'empty_tree' ? ', no commit yet' : ''}`;
    this.#diffStatus.replaceChildren(
      ...status.entries.map((entry) =>
        h(
          'li',
          { 'data-testid': 'git-status-entry', 'data-path': entry.path },
          h('code', { class: 'git-xy' }, `${entry.index}${entry.worktree}`),
          entry.original_path ? `${entry.original_path} → ${entry.path}` : entry.path,
        ),
      ),
    );
    this.#diffText.replaceChildren(
      ...diffLines(diff.diff),
      ...(diff.truncated ? [h('span', { class: 'diff-cut' }, '… the diff is longer than what is shown\n')] : []),
    );
    if (diff.diff === '') this.#diffText.append(h('span', { class: 'muted' }, 'No changes.'));
    show(this.#diffView, true);
  }

  #showNote(text: string | undefined): void {
    this.#note.textContent = text ?? '';
    show(this.#note, text !== undefined);
  }
}

/** A diff's lines as spans classed by what they are (file header, hunk, added, removed), as text: nothing in it is markup. */
function diffLines(text: string): HTMLSpanElement[] {
  return text
    .split('\n')
    .slice(0, text.endsWith('\n') ? -1 : undefined)
    .map((line) => {
      const kind = line.startsWith('diff --git')
        ? 'file'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+++') || line.startsWith('---')
            ? 'meta'
            : line.startsWith('+')
              ? 'add'
              : line.startsWith('-')
                ? 'del'
                : 'context';
      return h('span', { class: `diff-line diff-${kind}`, 'data-kind': kind }, `${line}\n`);
    });
}

function parentOf(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '' : path.slice(0, at);
}
