/** The page's colour scheme: the system's, or one the user chose (kept in this browser). */
const THEMES = ['system', 'light', 'dark'] as const;
type Theme = (typeof THEMES)[number];

const STORAGE_KEY = 'flotilla.theme';

/**
 * The theme toggle in the top bar: each press moves system → light → dark → system. The choice
 * sets `data-theme` on <html> (styles.css picks each colour's light or dark value by it; without
 * it, by the system's `prefers-color-scheme`) and is kept in local storage.
 */
export class ThemeToggle {
  #theme: Theme;

  constructor(readonly button: HTMLButtonElement) {
    const stored = localStorage.getItem(STORAGE_KEY);
    this.#theme = THEMES.includes(stored as Theme) ? (stored as Theme) : 'system';
    this.#apply();
    button.addEventListener('click', () => {
      this.#theme = THEMES[(THEMES.indexOf(this.#theme) + 1) % THEMES.length]!;
      if (this.#theme === 'system') localStorage.removeItem(STORAGE_KEY);
      else localStorage.setItem(STORAGE_KEY, this.#theme);
      this.#apply();
    });
  }

  #apply(): void {
    if (this.#theme === 'system') delete document.documentElement.dataset['theme'];
    else document.documentElement.dataset['theme'] = this.#theme;
    this.button.textContent = `Theme: ${this.#theme}`;
    this.button.dataset['theme'] = this.#theme;
    this.button.setAttribute('aria-label', `Colour theme: ${this.#theme}. Press to change.`);
  }
}
