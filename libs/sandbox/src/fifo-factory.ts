import { execFile } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Makes FIFOs (Node has no mkfifo, and starting the `mkfifo` program costs a process spawn, a
 * good part of a sandbox's start). Spares are made ahead in a spare directory, a batch per
 * spawn, and renamed into place when asked for; the next batch is made when few are left.
 */
export class FifoFactory {
  readonly #spares: string[] = [];
  #counter = 0;
  #refilling: Promise<void> | undefined;
  #prepared = false;
  #ready: Promise<void>;

  /** `spareDir` undefined: no spares, each FIFO made when asked for. */
  constructor(
    private readonly spareDir: string | undefined,
    private readonly batch = 32,
  ) {
    // spares are an optimisation: when their folder cannot be made, FIFOs are made when asked for
    this.#ready = spareDir === undefined ? Promise.resolve() : this.#prepare(spareDir).catch(() => undefined);
  }

  /** A FIFO (mode 0644) at `target`, whose folder exists. */
  async make(target: string): Promise<void> {
    await this.#ready;
    const spare = this.#spares.pop();
    this.#refill();
    if (spare !== undefined) {
      try {
        await rename(spare, target);
        return;
      } catch {
        // another filesystem, or the spare is gone: make it in place
      }
    }
    await run('mkfifo', ['-m', '0644', target]);
  }

  async #prepare(spareDir: string): Promise<void> {
    await rm(spareDir, { recursive: true, force: true });
    await mkdir(spareDir, { recursive: true, mode: 0o700 });
    this.#prepared = true;
    this.#refill();
  }

  #refill(): void {
    const spareDir = this.spareDir;
    if (spareDir === undefined || !this.#prepared || this.#refilling || this.#spares.length > this.batch / 4) return;
    this.#refilling = (async () => {
      try {
        const made = Array.from({ length: this.batch }, () => path.join(spareDir, `fifo-${(this.#counter += 1)}`));
        await run('mkfifo', ['-m', '0644', ...made]);
        this.#spares.push(...made);
      } catch {
        // spares are an optimisation: make() falls back to mkfifo in place
      } finally {
        this.#refilling = undefined;
      }
    })();
  }
}
