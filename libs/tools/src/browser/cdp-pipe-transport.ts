import type { SandboxProcess } from '@flotilla/sandbox';
import type { ConnectOverCDPTransport } from 'playwright-core';

/** A CDP message as it crosses the pipe, read only as far as routing needs. */
export type CdpMessage = {
  readonly id?: number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly [key: string]: unknown;
};

export type CdpPipeHooks = {
  /** Rewrites a message on its way to Chromium (e.g. download paths, which are paths inside the sandbox). */
  readonly outgoing?: (message: CdpMessage) => CdpMessage;
  /** Sees every message from Chromium before Playwright does. */
  readonly incoming?: (message: CdpMessage) => void;
};

/** The largest message Chromium may send in one piece (a full-page screenshot is a few MB of base64). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * Chromium's `--remote-debugging-pipe` (NUL-terminated JSON), which a sandboxed process carries on
 * its stdin and stdout, as a Playwright CDP transport: the browser stays inside the sandbox and no
 * port or socket is opened for it anywhere.
 */
export class CdpPipeTransport implements ConnectOverCDPTransport {
  onmessage?: (message: object) => void;
  onclose?: (reason?: string) => void;
  readonly #process: SandboxProcess;
  readonly #hooks: CdpPipeHooks;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #closed = false;

  constructor(process: SandboxProcess, hooks: CdpPipeHooks = {}) {
    this.#process = process;
    this.#hooks = hooks;
    process.stdout.on('data', (chunk: Buffer) => this.#receive(chunk));
    process.stdout.on('error', () => this.#finish('the browser’s pipe failed'));
    process.stdin.on('error', () => this.#finish('the browser’s pipe failed'));
    void process.exited.then((exit) =>
      this.#finish(`the browser exited (${exit.signal ?? `code ${String(exit.code)}`})`),
    );
  }

  send(message: object): void {
    if (this.#closed) return;
    const rewritten = this.#hooks.outgoing ? this.#hooks.outgoing(message as CdpMessage) : message;
    this.#process.stdin.write(`${JSON.stringify(rewritten)}\0`);
  }

  close(): void {
    if (this.#process.hasExited) return;
    this.#process.stdin.end();
    this.#process.signal('SIGKILL');
  }

  #receive(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(0, start); end !== -1; end = chunk.indexOf(0, start)) {
      this.#pending.push(chunk.subarray(start, end));
      const text = Buffer.concat(this.#pending).toString('utf8');
      this.#pending = [];
      this.#pendingBytes = 0;
      start = end + 1;
      this.#deliver(text);
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.subarray(start));
      this.#pendingBytes += chunk.length - start;
      // a browser that never ends its message would grow this without bound
      if (this.#pendingBytes > MAX_MESSAGE_BYTES) this.close();
    }
  }

  #deliver(text: string): void {
    let message: CdpMessage;
    try {
      message = JSON.parse(text) as CdpMessage;
    } catch {
      this.close();
      return;
    }
    this.#hooks.incoming?.(message);
    this.onmessage?.(message);
  }

  #finish(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.(reason);
  }
}
