import type { CliClient } from './cli-client.js';
import { relativeTime } from './format-resources.js';
import { clip, formatColumns } from './text.js';
import type { Terminal } from './terminal.js';
import type { WebhookCommand } from './webhook-args.js';

export type WebhookContext = { readonly out: Terminal; readonly err: Terminal; readonly now: () => Date };

/** Runs `webhook add|list|rm|dead`. */
export async function executeWebhookCommand(
  command: WebhookCommand,
  client: CliClient,
  context: WebhookContext,
): Promise<void> {
  const { out, err } = context;
  switch (command.name) {
    case 'webhook-add': {
      const created = await client.createWebhook({
        url: command.url,
        events: [...command.events],
        ...(command.description === undefined ? {} : { description: command.description }),
      });
      if (command.json) {
        out.line(JSON.stringify(created, null, 2));
      } else {
        out.line(created.id);
        out.line(created.secret);
      }
      err.line(
        `note: webhook ${created.id} gets ${created.events.join(', ')} at ${created.url}; its signing secret (${command.json ? '"secret"' : 'the second line'}) is shown only this once`,
      );
      return;
    }
    case 'webhook-list': {
      const webhooks = await client.listWebhooks();
      if (command.json) out.line(JSON.stringify(webhooks, null, 2));
      else if (webhooks.length === 0) err.line('no webhooks');
      else {
        const rows = webhooks.map((webhook) => [
          webhook.id,
          webhook.events.map((kind) => kind.replace(/^conversation\./, '')).join(','),
          clip(webhook.url, 60),
          relativeTime(new Date(webhook.created_at), context.now()),
          clip(webhook.description ?? '-', 30),
        ]);
        out.lines(formatColumns([['ID', 'EVENTS', 'URL', 'CREATED', 'DESCRIPTION'], ...rows]));
      }
      return;
    }
    case 'webhook-rm':
      await client.removeWebhook(command.id);
      out.line(`removed webhook ${command.id}`);
      return;
    case 'webhook-dead': {
      const letters = await client.listWebhookDeadLetters(command.id, { limit: command.limit });
      if (command.json) out.line(JSON.stringify(letters, null, 2));
      else if (letters.length === 0) err.line(`no dead letters for ${command.id}`);
      else {
        const rows = letters.map((letter) => [
          letter.last_attempt_at,
          letter.event.type.replace(/^conversation\./, ''),
          letter.event.data.conversation,
          String(letter.attempts),
          letter.event.id,
          clip(letter.last_error, 80),
        ]);
        out.lines(
          formatColumns([['LAST ATTEMPT', 'EVENT', 'CONVERSATION', 'ATTEMPTS', 'EVENT ID', 'LAST ERROR'], ...rows]),
        );
      }
      return;
    }
  }
}
