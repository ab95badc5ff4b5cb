import type { Sandbox, SandboxProcess } from '@flotilla/sandbox';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export type SandboxStdioOptions = {
  readonly command: string;
  readonly args: readonly string[];
  /** Variables added to the sandbox's scratch environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory as the sandbox sees it. */
  readonly cwd?: string;
  /** Receives the server's stderr. */
  readonly onStderr?: (text: string) => void;
};

/**
 * The MCP stdio transport, with the server started in a conversation's sandbox (the SDK's own
 * transport spawns it on the host, with the service's privileges): newline-delimited JSON-RPC
 * on the process's stdin and stdout.
 */
export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #buffer = new ReadBuffer();
  #process: SandboxProcess | undefined;
  #closed = false;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly options: SandboxStdioOptions,
  ) {}

  async start(): Promise<void> {
    if (this.#process) throw new Error('SandboxStdioTransport already started');
    const child = await this.sandbox.spawn(this.options.command, this.options.args, {
      ...(this.options.cwd === undefined ? {} : { cwd: this.options.cwd }),
      ...(this.options.env === undefined ? {} : { env: this.options.env }),
    });
    this.#process = child;
    child.stdout.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.#buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    child.stdout.on('error', (error: Error) => this.onerror?.(error));
    child.stderr.on('data', (chunk: Buffer) => this.options.onStderr?.(chunk.toString('utf8')));
    child.stdin.on('error', (error: Error) => this.onerror?.(error));
    void child.exited.then(() => this.#finish());
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.#process;
    if (!child || child.hasExited) return Promise.reject(new Error('the MCP server is not running'));
    return new Promise((resolve, reject) => {
      const written = child.stdin.write(serializeMessage(message), (error) => (error ? reject(error) : undefined));
      if (written) resolve();
      else child.stdin.once('drain', () => resolve());
    });
  }

  async close(): Promise<void> {
    const child = this.#process;
    if (child && !child.hasExited) {
      child.stdin.end();
      const exited = await Promise.race([
        child.exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2_000)),
      ]);
      if (!exited) child.signal('SIGKILL');
    }
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.clear();
    this.onclose?.();
  }
}
