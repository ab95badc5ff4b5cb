import path from 'node:path';
import type { Sandbox, SandboxProcess } from '@flotilla/sandbox';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CdpPipeTransport, type CdpMessage } from './cdp-pipe-transport.js';
import { chromiumCommand } from './chromium-command.js';

/** The workspace folder downloads are saved in. */
export const DOWNLOADS_FOLDER = 'downloads';

/** A download the page finished (or gave up), as the agent sees it. */
export type FinishedDownload = {
  readonly name: string;
  readonly state: 'completed' | 'canceled';
};

export type SandboxedBrowserOptions = {
  /** Longest the browser takes to start and connect. */
  readonly startTimeoutMs: number;
  readonly viewport: { readonly width: number; readonly height: number };
};

/** Bytes of Chromium's own output kept to explain a failed start. */
const STDERR_TAIL_BYTES = 4_096;

/**
 * One Chromium running inside a conversation's sandbox, driven by Playwright over the process's
 * pipes, with one page the agent works in (the newest, when a page opens another).
 */
export class SandboxedBrowser {
  readonly sandbox: Sandbox;
  readonly #process: SandboxProcess;
  readonly #browser: Browser;
  readonly #context: BrowserContext;
  readonly #downloads: FinishedDownload[];
  #page: Page;

  private constructor(
    sandbox: Sandbox,
    process: SandboxProcess,
    browser: Browser,
    context: BrowserContext,
    page: Page,
    downloads: FinishedDownload[],
  ) {
    this.sandbox = sandbox;
    this.#process = process;
    this.#browser = browser;
    this.#context = context;
    this.#page = page;
    this.#downloads = downloads;
    context.on('page', (opened) => {
      this.#page = opened;
    });
  }

  static async start(sandbox: Sandbox, options: SandboxedBrowserOptions): Promise<SandboxedBrowser> {
    const { command, args } = chromiumCommand();
    const process = await sandbox.spawn(command, args);
    let stderr = '';
    process.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    const downloads: FinishedDownload[] = [];
    const transport = new CdpPipeTransport(process, downloadHooks(sandbox, downloads));
    try {
      // loaded at the first browser: every service imports this lib, few of them browse
      const { chromium } = await import('playwright-core');
      const browser = await chromium.connectOverCDP(transport, { timeout: options.startTimeoutMs });
      const context = await browser.newContext({ viewport: options.viewport, acceptDownloads: true });
      const page = await context.newPage();
      return new SandboxedBrowser(sandbox, process, browser, context, page, downloads);
    } catch (error) {
      process.signal('SIGKILL');
      const detail = lastLines(stderr);
      throw new Error(
        `Chromium did not start in the sandbox: ${(error as Error).message.split('\n')[0] ?? ''}${detail ? `\n${detail}` : ''}`,
        { cause: error },
      );
    }
  }

  /** The page the agent works in; a new one when every page was closed. */
  async page(): Promise<Page> {
    if (this.#page.isClosed()) {
      const open = this.#context.pages().filter((candidate) => !candidate.isClosed());
      this.#page = open[open.length - 1] ?? (await this.#context.newPage());
    }
    return this.#page;
  }

  /** False once Chromium has exited or the connection to it is lost. */
  get alive(): boolean {
    return !this.#process.hasExited && this.#browser.isConnected();
  }

  /** The host pid of the sandboxed process Chromium runs in. */
  get pid(): number | undefined {
    return this.#process.pid;
  }

  /** Downloads finished since the last call. */
  takeDownloads(): FinishedDownload[] {
    return this.#downloads.splice(0);
  }

  async close(): Promise<void> {
    const closing = this.#browser.close().catch(() => undefined);
    await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.#process.signal('SIGKILL');
    await this.#process.exited;
  }
}

/**
 * Playwright asks Chromium to save downloads under their ids in a folder of this host, which the
 * sandboxed browser cannot see: the request is rewritten to save them under their own names in
 * the workspace's `downloads/` (Chromium writes them there itself, as the sandbox's user, so the
 * tool runner never copies a file the agent could swap for a link), and their progress is noted.
 */
function downloadHooks(
  sandbox: Sandbox,
  downloads: FinishedDownload[],
): ConstructorParameters<typeof CdpPipeTransport>[1] {
  const names = new Map<string, string>();
  const inside = sandbox.toInside(path.join(sandbox.hostWorkspace, DOWNLOADS_FOLDER));
  return {
    outgoing: (message: CdpMessage): CdpMessage => {
      if (message.method !== 'Browser.setDownloadBehavior' || message.params?.['behavior'] === 'deny') return message;
      return {
        ...message,
        params: { ...message.params, behavior: 'allow', downloadPath: inside, eventsEnabled: true },
      };
    },
    incoming: (message: CdpMessage): void => {
      const params = message.params ?? {};
      const guid = typeof params['guid'] === 'string' ? params['guid'] : undefined;
      if (guid === undefined) return;
      if (message.method === 'Browser.downloadWillBegin' && typeof params['suggestedFilename'] === 'string') {
        names.set(guid, params['suggestedFilename']);
      } else if (message.method === 'Browser.downloadProgress') {
        const state = params['state'];
        const name = names.get(guid);
        if ((state === 'completed' || state === 'canceled') && name !== undefined) {
          names.delete(guid);
          downloads.push({ name, state });
        }
      }
    },
  };
}

function lastLines(text: string): string {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.includes('dbus'))
    .slice(-5)
    .join('\n');
}
