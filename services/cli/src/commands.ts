import type { CommandResult, Conversation } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import type { Command } from './args.js';
import type { FollowOptions } from './cli-options.js';
import type { CliClient } from './cli-client.js';
import { renderConversation, renderConversationTable, renderServerInfo } from './format-resources.js';
import { renderEvent } from './render-event.js';
import { replayConversation } from './replay-command.js';
import { executeSecretCommand, type SecretInput } from './secret-commands.js';
import { specFileFields } from './spec-args.js';
import { executeSpecCommand, readInputFile } from './spec-commands.js';
import { tailConversation } from './tail.js';
import type { Terminal } from './terminal.js';
import { watchConversation } from './watch.js';
import { executeScheduleCommand } from './schedule-commands.js';
import { executeWebhookCommand } from './webhook-commands.js';
import { usageError } from './errors.js';
import { readImageFiles } from './image-files.js';

export const ExitCode = { Ok: 0, Failed: 1, Usage: 2, Interrupted: 130 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** What a command needs besides its client. */
export type CommandContext = {
  readonly out: Terminal;
  readonly err: Terminal;
  /** Colour on stdout. */
  readonly color: boolean;
  /** stdout is a TTY: spinners are allowed. */
  readonly interactive: boolean;
  readonly signal?: AbortSignal;
  readonly now: () => Date;
  /** Where `secret set` reads a value from (stdin, a file). */
  readonly input?: SecretInput;
};

/** The commands that talk to the gateway (`tap` reads NATS itself, `help` and `version` need nothing: run-cli.ts). */
type Runnable = Exclude<Command, { name: 'help' } | { name: 'version' } | { name: 'tap' }>;

/** Runs one parsed command against the gateway. Errors (FlotillaApiError, …) propagate. */
export async function executeCommand(command: Runnable, client: CliClient, context: CommandContext): Promise<ExitCode> {
  const { out } = context;
  switch (command.name) {
    case 'create': {
      const spec =
        command.specFile === undefined
          ? undefined
          : specFileFields(await readInputFile(command.specFile, '--spec', context), command.specFile);
      const { conversation, created } = await client.createConversation({
        ...(command.template === undefined ? {} : { template: command.template }),
        ...(spec === undefined ? {} : { spec }),
        ...(command.id === undefined ? {} : { id: command.id }),
        ...(command.title === undefined ? {} : { title: command.title }),
        ...(command.tags.length === 0 ? {} : { tags: [...command.tags] }),
        ...(command.message === undefined ? {} : { message: command.message }),
        ...(command.run ? { run: true } : {}),
      });
      out.line(conversation.id);
      if (!created) context.err.line(`note: conversation ${conversation.id} already exists; it was left unchanged`);
      return command.watch ? watch(client, conversation.id, 0, command.watch, context) : ExitCode.Ok;
    }
    case 'send': {
      const text = command.textFromStdin ? await messageFromStdin(context, command.images.length > 0) : command.text;
      return commandThenWatch(client, command.id, command.watch, context, 'sent to', async () =>
        client.sendMessage(command.id, text, {
          run: command.run,
          ...(command.onBusy === undefined ? {} : { on_busy: command.onBusy }),
          ...(command.images.length === 0 ? {} : { images: await readImageFiles(command.images, context) }),
        }),
      );
    }
    case 'run':
      return commandThenWatch(client, command.id, command.watch, context, 'run', () => client.run(command.id));
    case 'approve':
      return commandThenWatch(client, command.id, command.watch, context, 'approved', () => client.approve(command.id));
    case 'reject':
      return commandThenWatch(client, command.id, command.watch, context, 'rejected', () =>
        client.reject(command.id, command.reason),
      );
    case 'pause':
      return commandThenWatch(client, command.id, undefined, context, 'pause requested for', () =>
        client.pause(command.id, command.reason),
      );
    case 'interrupt':
      return commandThenWatch(client, command.id, undefined, context, 'interrupted', () =>
        client.interrupt(command.id, command.reason),
      );
    case 'watch':
      return watch(client, command.id, command.afterSeq, command, context);
    case 'tail': {
      const result = await tailConversation(client, command.id, out, {
        afterSeq: command.afterSeq,
        follow: command.follow,
        ...(context.signal ? { signal: context.signal } : {}),
      });
      return result.interrupted ? ExitCode.Interrupted : ExitCode.Ok;
    }
    case 'list': {
      const items = await listConversations(client, command);
      if (command.json) out.line(JSON.stringify(items, null, 2));
      else out.lines(renderConversationTable(items, context.now()));
      return ExitCode.Ok;
    }
    case 'get': {
      const conversation = await client.getConversation(command.id);
      out.lines(command.json ? [JSON.stringify(conversation, null, 2)] : renderConversation(conversation));
      return ExitCode.Ok;
    }
    case 'events': {
      let count = 0;
      for await (const event of searchEvents(client, command)) {
        out.lines(
          command.json
            ? [JSON.stringify(event)]
            : renderEvent(event, { color: context.color, verbose: true, seq: true }),
        );
        count += 1;
      }
      if (count === 0 && !command.json) context.err.line('no events match');
      return ExitCode.Ok;
    }
    case 'info': {
      const info = await client.serverInfo();
      out.lines(command.json ? [JSON.stringify(info, null, 2)] : renderServerInfo(info));
      return ExitCode.Ok;
    }
    case 'spec':
    case 'model':
      await executeSpecCommand(command, client, context);
      return ExitCode.Ok;
    case 'fork': {
      const { conversation, created } = await client.forkConversation(command.id, {
        ...(command.childId === undefined ? {} : { id: command.childId }),
        ...(command.atSeq === undefined ? {} : { at_seq: command.atSeq }),
        ...(command.title === undefined ? {} : { title: command.title }),
        ...(command.message === undefined ? {} : { message: command.message }),
        ...(command.run ? { run: true } : {}),
      });
      out.line(conversation.id);
      if (!created) context.err.line(`note: conversation ${conversation.id} already exists; it was left unchanged`);
      return command.watch ? watch(client, conversation.id, 0, command.watch, context) : ExitCode.Ok;
    }
    case 'rewind': {
      const result = await client.rewind(command.id, {
        to_seq: command.toSeq,
        ...(command.reason === undefined ? {} : { reason: command.reason }),
      });
      out.line(
        result.appended
          ? `rewound ${command.id} to event ${command.toSeq} (now ${result.status})`
          : `${command.id} is already at event ${command.toSeq}`,
      );
      return ExitCode.Ok;
    }
    case 'ask': {
      out.line((await client.ask(command.id, command.question)).answer);
      return ExitCode.Ok;
    }
    case 'replay': {
      const same = await replayConversation(client, command.id, command.check, {
        out,
        err: context.err,
        ...(context.input ? { input: context.input } : {}),
      });
      return same ? ExitCode.Ok : ExitCode.Failed;
    }
    case 'keys-create': {
      const created = await client.createApiKey(command.tenant, command.keyName);
      if (command.json) {
        out.line(JSON.stringify(created, null, 2));
      } else {
        out.line(created.api_key);
        context.err.line(`note: API key "${created.name}" for tenant ${created.tenant}; it is shown only this once`);
      }
      return ExitCode.Ok;
    }
    case 'secret-set':
    case 'secret-rm':
    case 'secret-ls':
      await executeSecretCommand(command, client, context);
      return ExitCode.Ok;
    case 'webhook-add':
    case 'webhook-list':
    case 'webhook-rm':
    case 'webhook-dead':
      await executeWebhookCommand(command, client, context);
      return ExitCode.Ok;
    case 'schedule-add':
    case 'schedule-list':
    case 'schedule-get':
    case 'schedule-pause':
    case 'schedule-resume':
    case 'schedule-run':
    case 'schedule-rm':
      await executeScheduleCommand(command, client, context);
      return ExitCode.Ok;
  }
}

async function commandThenWatch(
  client: CliClient,
  id: string,
  follow: FollowOptions | undefined,
  context: CommandContext,
  verb: string,
  send: () => Promise<CommandResult>,
): Promise<ExitCode> {
  // watching shows what the command appended: start from the position before it
  const before = follow ? (await client.getConversation(id)).last_seq : 0;
  const result = await send();
  if (!follow) {
    context.out.line(
      result.appended
        ? `${verb} ${id} (status ${result.status}, seq ${result.last_seq})`
        : `${verb} ${id}: nothing to do (status ${result.status})`,
    );
    return ExitCode.Ok;
  }
  if (!result.appended) context.err.line(`note: nothing to do (status ${result.status})`);
  return watch(client, id, before, follow, context);
}

async function watch(
  client: CliClient,
  id: string,
  afterSeq: number,
  follow: FollowOptions,
  context: CommandContext,
): Promise<ExitCode> {
  const result = await watchConversation(client, id, context.out, {
    afterSeq,
    follow: follow.follow,
    verbose: follow.verbose,
    color: context.color,
    spinner: context.interactive,
    ...(context.signal ? { signal: context.signal } : {}),
    onNotice: (text) => context.err.line(text),
  });
  return result.interrupted ? ExitCode.Interrupted : ExitCode.Ok;
}

const PAGE = 200;

async function listConversations(
  client: CliClient,
  command: Extract<Command, { name: 'list' }>,
): Promise<Conversation[]> {
  const status = command.status === undefined ? {} : { status: command.status };
  if (command.limit <= PAGE) return (await client.listConversations({ ...status, limit: command.limit })).items;
  const items: Conversation[] = [];
  for await (const conversation of client.allConversations({ ...status, limit: PAGE })) {
    items.push(conversation);
    if (items.length >= command.limit) break;
  }
  return items;
}

async function* searchEvents(client: CliClient, command: Extract<Command, { name: 'events' }>): AsyncGenerator<Event> {
  let remaining = command.limit;
  let cursor: string | undefined;
  do {
    const page = await client.searchEvents(command.id, {
      ...(command.types === undefined ? {} : { type: command.types.join(',') }),
      ...(command.text === undefined ? {} : { text: command.text }),
      ...(command.afterSeq === undefined || cursor !== undefined ? {} : { after_seq: command.afterSeq }),
      ...(cursor === undefined ? {} : { cursor }),
      limit: Math.min(PAGE, remaining),
    });
    for (const event of page.items.slice(0, remaining)) yield event;
    remaining -= Math.min(remaining, page.items.length);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined && remaining > 0);
}

/** `send ID -`: the message is all of standard input. */
async function messageFromStdin(context: CommandContext, withImages: boolean): Promise<string> {
  if (!context.input?.readStdinText)
    throw usageError('send: TEXT - reads standard input, which this caller does not give');
  const text = await context.input.readStdinText();
  if (text.trim() === '' && !withImages)
    throw usageError('send: standard input was empty: nothing to send (pipe the message in, or give TEXT)');
  return text;
}
