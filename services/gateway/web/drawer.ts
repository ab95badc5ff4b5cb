/**
 * On small screens (styles.css, under 760 px) the conversation takes the whole width and the
 * sidebar (new conversation, the list, schedules) is a drawer over it: the top bar's button opens
 * and closes it, Escape closes it, and opening a conversation closes it. On wider screens the
 * button is hidden and the sidebar always shows.
 */
export class Drawer {
  constructor(
    readonly button: HTMLButtonElement,
    readonly workspace: HTMLElement,
  ) {
    button.addEventListener('click', () => this.#set(!this.isOpen));
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.isOpen) this.#set(false);
    });
  }

  get isOpen(): boolean {
    return this.workspace.dataset['drawer'] === 'open';
  }

  close(): void {
    this.#set(false);
  }

  #set(open: boolean): void {
    if (open) this.workspace.dataset['drawer'] = 'open';
    else delete this.workspace.dataset['drawer'];
    this.button.setAttribute('aria-expanded', String(open));
  }
}
