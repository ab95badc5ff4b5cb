import { failedHook, HOOK_OUTPUT_BOUNDS, hookOutcome, type HookCommand, type HookOutcome } from '@flotilla/agent';
import type { Sandbox } from '@flotilla/sandbox';
import type { Readable } from 'node:stream';

/**
 * Runs one hook: a command in the conversation's sandbox (`sh -c`, the hook's input on stdin, its
 * process group killed at the timeout), or an HTTP hook POSTed the input from the tool runner
 * (with its timeout, no redirects followed). What it prints or answers is read up to
 * HOOK_OUTPUT_BOUNDS.readBytes. Never throws: a hook that fails is an outcome that blocks nothing.
 */
export async function runHook(hook: HookCommand, input: string, sandbox: Sandbox | undefined): Promise<HookOutcome> {
  return hook.type === 'command'
    ? await runCommandHook(hook.command, hook.timeoutSeconds, input, sandbox)
    : await runHttpHook(hook.url, hook.timeoutSeconds, input);
}

async function runCommandHook(
  command: string,
  timeoutSeconds: number,
  input: string,
  sandbox: Sandbox | undefined,
): Promise<HookOutcome> {
  if (!sandbox) return failedHook('the hook was not run: this conversation has no sandbox here');
  let child;
  try {
    child = await sandbox.spawn('sh', ['-c', command]);
  } catch (error) {
    return failedHook(`the hook could not be started: ${(error as Error).message}`);
  }
  child.stdin.on('error', () => undefined); // a hook that does not read its input closes the pipe
  child.stdin.end(input);
  const stdout = bounded(child.stdout);
  const stderr = bounded(child.stderr);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.signal('SIGKILL');
  }, timeoutSeconds * 1_000);
  try {
    const exit = await child.exited;
    if (timedOut) return failedHook(`the hook did not finish within ${timeoutSeconds} s and was stopped`);
    return hookOutcome(exit.code, await stdout, await stderr);
  } finally {
    clearTimeout(timer);
  }
}

async function runHttpHook(url: string, timeoutSeconds: number, input: string): Promise<HookOutcome> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: input,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutSeconds * 1_000),
    });
    const body = response.body ? await bounded(response.body) : '';
    if (!response.ok)
      return failedHook(`the hook answered HTTP ${response.status}${body.trim() ? `: ${body.trim()}` : ''}`);
    return { ...hookOutcome(0, body, ''), exitCode: null };
  } catch (error) {
    const cause =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${timeoutSeconds} s`
        : (error as Error).message;
    return failedHook(`the hook could not be reached: ${cause}`);
  }
}

/** A stream's text, up to the read bound (the rest is read and dropped, so the writer never blocks). */
async function bounded(stream: Readable | ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Uint8Array>) {
      if (size >= HOOK_OUTPUT_BOUNDS.readBytes) continue;
      const part = Buffer.from(chunk).subarray(0, HOOK_OUTPUT_BOUNDS.readBytes - size);
      chunks.push(part);
      size += part.length;
    }
  } catch {
    // a stream cut off (a killed hook, a dropped connection): what was read counts
  }
  return Buffer.concat(chunks).toString('utf8');
}
