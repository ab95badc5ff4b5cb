import type { Terminal } from './terminal.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * A spinner on the terminal's overlay line while the conversation runs and nothing arrives.
 * Disabled (does nothing at all) when the output is not a TTY.
 */
export class Spinner {
  #active = false;
  #lastActivity = Date.now();
  #frame = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly terminal: Terminal,
    readonly enabled: boolean,
    readonly paint: (text: string) => string = (text) => text,
    readonly label = 'running',
    readonly idleMs = 300,
  ) {}

  /** Spin (after `idleMs` of quiet) while active. */
  setActive(active: boolean): void {
    if (!this.enabled || active === this.#active) return;
    this.#active = active;
    if (active) {
      this.#lastActivity = Date.now();
      this.#timer = setInterval(() => this.#tick(), 100);
      this.#timer.unref();
    } else {
      this.stop();
    }
  }

  /** Something was shown: the spinner waits for the next quiet spell. */
  touch(): void {
    this.#lastActivity = Date.now();
  }

  stop(): void {
    this.#active = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.enabled) this.terminal.clearOverlay();
  }

  #tick(): void {
    if (!this.#active || Date.now() - this.#lastActivity < this.idleMs || this.terminal.midLine) return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.terminal.overlay(this.paint(`${FRAMES[this.#frame]} ${this.label}…`));
  }
}
