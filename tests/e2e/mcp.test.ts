import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/**
 * Issue 18 item 3: a conversation's spec names MCP servers; the tool runner starts them inside the
 * conversation's sandbox at the first step, lists their tools in the log, and the step offers them
 * to the model, whose calls go through the server. A real third-party server from npm
 * (@modelcontextprotocol/server-filesystem), reachable in the sandbox as the operator installed
 * it (here: this repository's node_modules, bound read-only with FLOTILLA_SANDBOX_RO_PATHS).
 */
const NODE_MODULES = fileURLToPath(new URL('../../node_modules', import.meta.url));
const FILESYSTEM_SERVER = join(NODE_MODULES, '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const REST = ['finished', 'error', 'stuck'] as const;
const NOTE = 'written by the MCP filesystem server';

type Mcp = Extract<Event, { type: 'mcp_tools' }>;
type Observation = Extract<Event, { type: 'observation' }>;

const files = { name: 'files', transport: 'stdio', command: 'node', args: [FILESYSTEM_SERVER, '/workspace'] };
const broken = { name: 'broken', transport: 'stdio', command: 'flotilla-no-such-mcp-server' };

async function create(
  system: RunningTestSystem,
  id: string,
  calls: BrainTask['calls'],
  mcpServers: readonly unknown[],
): Promise<ConversationRef> {
  const created = await system.api('POST', '/conversations', {
    id,
    message: taskMessage({ id, effects: system.effects, steps: calls?.length ?? 0, calls }),
    run: true,
    spec: { mcpServers },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { tenant: 'acme', conversation: id };
}

const observations = (events: readonly Event[]): Observation[] =>
  events.filter((event): event is Observation => event.type === 'observation');
const textOf = (observation: Observation | undefined): string =>
  (observation?.content ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');

/** Host pids of the node processes whose command line holds `needle` (not the bwrap that started one), with their ancestors' pids. */
async function processesWith(needle: string): Promise<{ pid: number; ancestors: number[] }[]> {
  const found: { pid: number; ancestors: number[] }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const words = commandLine.split('\0');
    if (words[0] !== 'node' || !words.includes(needle)) continue;
    const ancestors: number[] = [];
    for (let pid = Number(entry); pid > 1;) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? 0);
      if (pid > 0) ancestors.push(pid);
    }
    found.push({ pid: Number(entry), ancestors });
  }
  return found;
}

describe('MCP servers of a conversation’s spec (through the services)', () => {
  it('a real npm server runs in the sandbox, its tools are listed in the log and offered, its results read by the model; a broken one is a visible error and the run goes on; a server that dies is started again', async () => {
    await using system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      catalog: { limits: { mcpCommands: ['node', 'flotilla-no-such-mcp-server'] } },
      toolRunnerEnv: { FLOTILLA_SANDBOX_RO_PATHS: NODE_MODULES },
    });
    // the operator allows no MCP command by default: a spec naming one is refused, naming the field
    const refused = await system.api('POST', '/conversations', {
      id: 'mcp-refused',
      spec: { mcpServers: [{ ...files, command: 'npx' }] },
    });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('spec.mcpServers.0.command');

    const id = 'mcp-files';
    const ref = await create(
      system,
      id,
      [
        { tool: 'files_write_file', input: { path: '/workspace/from-mcp.txt', content: NOTE } },
        { tool: 'files_list_directory', input: { path: '/workspace' } },
        // the test kills the server once two results are in: the next call of it starts it again
        { tool: 'terminal', input: { command: 'sleep 4; cat from-mcp.txt' } },
        { tool: 'files_read_text_file', input: { path: '/workspace/from-mcp.txt' } },
      ],
      [files, broken],
    );

    // the server runs while the conversation does: inside its sandbox, under this system's tool runner
    const runner = system.processes.find((child) => child.name === 'tool-runner-1')!.pid!;
    let servers: { pid: number; ancestors: number[] }[] = [];
    await expect
      .poll(
        async () =>
          (servers = (await processesWith(FILESYSTEM_SERVER)).filter((found) => found.ancestors.includes(runner)))
            .length,
        { timeout: 60_000, interval: 100 },
      )
      .toBe(1);
    const [server] = servers;
    expect(await readlink(`/proc/${server!.pid}/ns/mnt`)).not.toBe(await readlink('/proc/self/ns/mnt'));
    const environment = (await readFile(`/proc/${server!.pid}/environ`, 'utf8')).split('\0');
    expect(environment.filter((variable) => variable.startsWith('FLOTILLA_'))).toEqual([]);

    // killed in the middle of the run (during the terminal's sleep): the next call starts it again
    await expect
      .poll(async () => observations(await system.events(ref)).length, { timeout: 60_000, interval: 100 })
      .toBe(2);
    process.kill(server!.pid, 'SIGKILL');
    await system.waitForStatus([ref], REST, 90_000);
    expect(await system.status(ref)).toBe('finished');

    const events = await system.events(ref);
    const listings = events.filter((event): event is Mcp => event.type === 'mcp_tools');
    expect(listings.map((listing) => listing.server).sort()).toEqual(['broken', 'files']);
    const spec = events.find((event) => event.type === 'agent_spec')!;
    expect(listings.every((listing) => listing.spec_seq === spec.seq)).toBe(true);
    // listed before the first step that could use them
    const firstStep = events.findIndex((event) => event.type === 'llm_usage');
    expect(Math.max(...listings.map((listing) => events.indexOf(listing)))).toBeLessThan(firstStep);
    const listed = listings.find((listing) => listing.server === 'files')!;
    expect(listed.error).toBeUndefined();
    expect(listed.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['files_read_text_file', 'files_write_file', 'files_list_directory']),
    );
    expect(listed.tools.find((tool) => tool.name === 'files_write_file')?.parameters).toMatchObject({
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
    });
    // the broken server: a visible error, naming it, and no tools
    const failed = listings.find((listing) => listing.server === 'broken')!;
    expect(failed.tools).toEqual([]);
    expect(failed.error?.message).toMatch(/MCP server "broken" could not be started or listed/);
    expect(failed.error?.message).toContain('flotilla-no-such-mcp-server');

    // the model was offered the server's tools with their schemas, and nothing of the broken one
    const requests = system.brain.requests.map(
      (body) =>
        JSON.parse(body) as {
          tools?: { function: { name: string; parameters: { properties?: Record<string, unknown> } } }[];
          messages: { role: string; content?: unknown }[];
        },
    );
    const steps = requests.filter(
      (request) =>
        JSON.stringify(request.messages).includes(`"id":"${id}"`) ||
        JSON.stringify(request.messages).includes(`\\"id\\":\\"${id}\\"`),
    );
    expect(steps.length).toBe(5);
    const offered = steps[0]!.tools!.map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['terminal', 'files_write_file', 'files_list_directory']));
    expect(offered.some((name) => name.startsWith('broken_'))).toBe(false);
    expect(
      steps[0]!.tools!.find((tool) => tool.function.name === 'files_write_file')?.function.parameters.properties,
    ).toHaveProperty('content');

    // the server wrote into the conversation's workspace (its /workspace), and listed it
    const results = observations(events);
    expect(results.map((result) => result.is_error)).toEqual([false, false, false, false]);
    expect(await readFile(join(system.home, 'workspaces', 'acme', id, 'from-mcp.txt'), 'utf8')).toBe(NOTE);
    expect(textOf(results[1])).toContain('from-mcp.txt');
    expect(textOf(results[2])).toContain(NOTE);
    // ...after it was killed, started again: a new process, the file read through it
    expect(textOf(results[3])).toContain(NOTE);
    const restarted = (await processesWith(FILESYSTEM_SERVER)).filter((found) => found.ancestors.includes(runner));
    expect(restarted.map((found) => found.pid)).not.toContain(server!.pid);
    expect(restarted).toHaveLength(1);
    // each result was read by the model in its next request
    expect(JSON.stringify(steps[2]!.messages)).toContain('from-mcp.txt');
    expect(JSON.stringify(steps[4]!.messages)).toContain(NOTE);

    await expectAudited(system.log, ref);
  }, 240_000);
});
