// What the docker provider's test files run in a sandbox and read of it, against the stand-in
// engine (docker-provider-fake-engine.test.ts) and a real one (docker-provider-real-engine.test.ts).
import { expect } from 'vitest';
import { isSandboxError, type SandboxErrorCode } from '../../errors.js';
import type { Sandbox, SandboxProcess } from '../../sandbox.js';

/** Variables a shell adds on its own (they are not leaks from the service). */
const SHELL_VARIABLES = new Set(['PWD', 'OLDPWD', 'SHLVL', '_']);

export async function run(
  sandbox: Sandbox,
  script: string,
  options: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }> {
  const child: SandboxProcess = await sandbox.spawn('bash', ['-c', script], options.env ? { env: options.env } : {});
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), options.timeoutMs ?? 20_000);
  const exit = await child.exited;
  clearTimeout(timer);
  return { stdout, stderr, ...exit };
}

/** Resolves with the first stdout line matching `pattern`. */
export function lineOf(child: SandboxProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within 10 s (saw: ${text})`)), 10_000);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = pattern.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

export function variablesOf(envOutput: string): Record<string, string> {
  return Object.fromEntries(
    envOutput
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])
      .filter(([name]) => !SHELL_VARIABLES.has(name!)),
  );
}

export async function expectSandboxError(
  promise: Promise<unknown>,
  code: SandboxErrorCode,
  pattern: RegExp,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(isSandboxError(error), `expected a SandboxError, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  expect((error as Error).message).toMatch(pattern);
}
