import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import type { TerminalParameters } from './terminal-tool.js';
import { createTerminalTool } from './terminal-tool.js';

const terminal = createTerminalTool({ softTimeoutSeconds: 0.5, interruptGraceSeconds: 1 });
let dir: string;
let context: ToolContext;

async function run(params: Partial<TerminalParameters>, ctx: ToolContext = context) {
  const result = await terminal.execute(TerminalParametersDefaults(params), ctx);
  return { result, text: resultText(result), details: result.details ?? {} };
}

function TerminalParametersDefaults(params: Partial<TerminalParameters>): TerminalParameters {
  return { command: '', is_input: false, reset: false, ...params };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-terminal-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
});

afterAll(async () => {
  await terminal.close?.();
  await rm(dir, { recursive: true, force: true });
});

describe('terminal', () => {
  it('keeps cwd and environment between calls', async () => {
    await run({ command: 'mkdir -p sub && cd sub && export FLOTILLA_X=42' });
    const { text, details } = await run({ command: 'pwd; echo "x=$FLOTILLA_X"' });
    expect(text).toContain(`${context.workspace.root}/sub`);
    expect(text).toContain('x=42');
    expect(details['cwd']).toBe(`${context.workspace.root}/sub`);
    await run({ command: `cd ${context.workspace.root}` });
  });

  it('reports exit codes', async () => {
    const failed = await run({ command: 'ls /definitely/not/here' });
    expect(failed.details['exit_code']).toBe(2);
    expect(failed.text).toContain('exit code 2');
    expect(failed.text).toMatch(/No such file/);
    expect((await run({ command: 'true' })).details['exit_code']).toBe(0);
  });

  it('handles commands with quotes, heredocs and syntax errors without hanging', async () => {
    expect((await run({ command: `echo 'it'"'"'s' "a\\"b"` })).text).toContain(`it's a"b`);
    expect((await run({ command: 'cat <<EOF\nline one\nEOF' })).text).toContain('line one');
    const broken = await run({ command: 'echo "unterminated' });
    expect(broken.details['still_running']).toBe(false);
    expect(broken.details['exit_code']).not.toBe(0);
  });

  it('returns still-running on a soft timeout, polls, then interrupts with C-c', async () => {
    const first = await run({ command: 'echo started; sleep 5; echo finished' });
    expect(first.details['still_running']).toBe(true);
    expect(first.text).toContain('started');
    expect(first.text).toContain('still running');
    const poll = await run({ command: '' });
    expect(poll.details['still_running']).toBe(true);
    const refused = await run({ command: 'echo other' });
    expect(refused.result.isError).toBe(true);
    expect(refused.text).toContain('NOT run');
    const interrupted = await run({ command: 'C-c', is_input: true });
    expect(interrupted.details['still_running']).toBe(false);
    expect((await run({ command: 'echo alive' })).text).toContain('alive');
  });

  it('sends input to a process reading stdin, and C-d ends it', async () => {
    const waiting = await run({ command: 'read -r name; echo "hello $name"' });
    expect(waiting.details['still_running']).toBe(true);
    const answered = await run({ command: 'flotilla', is_input: true });
    expect(answered.text).toContain('hello flotilla');
    expect(answered.details['exit_code']).toBe(0);
    await run({ command: 'cat' });
    const ended = await run({ command: 'C-d', is_input: true });
    expect(ended.details['exit_code']).toBe(0);
  });

  it('interrupts a never-ending command at the hard timeout', async () => {
    const { result, text, details } = await run({
      command: 'while true; do sleep 0.1; done; echo after-loop',
      timeout: 1,
    });
    expect(result.isError).toBe(true);
    expect(text).toContain('timed out after 1 seconds and was interrupted with C-c');
    expect(text).not.toContain('after-loop');
    expect(details['exit_code']).toBe(130);
    expect(details['still_running']).toBe(false);
    expect((await run({ command: 'echo ok' })).text).toContain('ok');
  });

  it('kills the shell when C-c does not stop the command, and recovers', async () => {
    const { text } = await run({ command: "trap '' INT; sleep 30", timeout: 0.5 });
    expect(text).toContain('shell was killed');
    const next = await run({ command: 'echo recovered' });
    expect(next.text).toContain('recovered');
  });

  it('resets the shell', async () => {
    await run({ command: 'export GONE=1; cd sub' });
    const reset = await run({ reset: true });
    expect(reset.text).toContain('reset');
    const { text } = await run({ command: 'echo "gone=${GONE:-no}"; pwd' });
    expect(text).toContain('gone=no');
    expect(text).toContain(context.workspace.root);
  });

  it('bounds huge output and offloads the full text', async () => {
    const { text, details } = await run({ command: 'seq 1 200000' });
    expect(text.length).toBeLessThan(30_000);
    expect(text).toContain('response clipped');
    const file = details['output_file'] as string;
    expect(text).toContain(file);
    const saved = await readFile(file, 'utf8');
    expect(saved.startsWith('1\n2\n')).toBe(true);
    expect(saved.trimEnd().endsWith('199999\n200000')).toBe(true);
    expect(saved.split('\n').filter(Boolean)).toHaveLength(200000);
  });

  it('describes binary output readably', async () => {
    const { text, details } = await run({ command: 'head -c 2000 /dev/urandom' });
    expect(text).toContain('binary');
    expect(text.length).toBeLessThan(1_000);
    expect(details['exit_code']).toBe(0);
  });

  it('restarts after the shell exits', async () => {
    const exited = await run({ command: 'exit 3' });
    expect(exited.text).toContain('shell exited with code 3');
    expect((await run({ command: 'echo back' })).text).toContain('back');
  });

  it('refuses empty commands and input when nothing runs', async () => {
    expect((await run({ command: '' })).result.isError).toBe(true);
    expect((await run({ command: 'x', is_input: true })).result.isError).toBe(true);
  });

  it('keeps conversations apart', async () => {
    const other = createToolContext({ workspace: context.workspace, conversationId: 'c2' });
    await run({ command: 'export ONLY_HERE=1' }, other);
    expect((await run({ command: 'echo "v=${ONLY_HERE:-unset}"' })).text).toContain('v=unset');
    await terminal.closeConversation('c2');
  });
});
