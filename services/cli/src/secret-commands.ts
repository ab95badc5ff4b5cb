import { usageError } from './errors.js';
import type { CliClient } from './cli-client.js';
import type { SecretCommand, SecretTarget } from './secret-args.js';
import type { Terminal } from './terminal.js';

/** How `secret set` reads a value it is not given on the command line. */
export type SecretInput = {
  /** All of stdin (a terminal reads one line without echoing it, after showing `prompt`). */
  readStdin(prompt: string): Promise<string>;
  /** All of stdin as typed, one final line break dropped (`send ID -`). */
  readStdinText?(): Promise<string>;
  readFile(path: string): Promise<string>;
  /** A file's bytes (`send --image`). */
  readBytes?(path: string): Promise<Uint8Array>;
};

export type SecretContext = { readonly out: Terminal; readonly err: Terminal; readonly input?: SecretInput };

/** Runs `secret set|rm|ls`. The value is read, sent and forgotten: nothing prints it. */
export async function executeSecretCommand(
  command: SecretCommand,
  client: CliClient,
  context: SecretContext,
): Promise<void> {
  const { out, err } = context;
  const where = describeTarget(command.target);
  switch (command.name) {
    case 'secret-set': {
      const value = await readValue(command, context);
      if ('conversation' in command.target)
        await client.setConversationSecret(command.target.conversation, command.secretName, value);
      else await client.setTenantSecret(command.secretName, value);
      out.line(`set secret ${command.secretName} of ${where}`);
      return;
    }
    case 'secret-rm':
      if ('conversation' in command.target)
        await client.removeConversationSecret(command.target.conversation, command.secretName);
      else await client.removeTenantSecret(command.secretName);
      out.line(`removed secret ${command.secretName} of ${where}`);
      return;
    case 'secret-ls': {
      const names =
        'conversation' in command.target
          ? await client.listConversationSecrets(command.target.conversation)
          : await client.listTenantSecrets();
      if (command.json) out.line(JSON.stringify({ names }));
      else if (names.length === 0) err.line(`no secrets in ${where}`);
      else out.lines(names);
      return;
    }
  }
}

function describeTarget(target: SecretTarget): string {
  return 'conversation' in target ? `conversation ${target.conversation}` : 'the tenant defaults';
}

async function readValue(
  command: Extract<SecretCommand, { name: 'secret-set' }>,
  context: SecretContext,
): Promise<string> {
  const { source } = command;
  switch (source.kind) {
    case 'argument':
      context.err.line(
        'warning: --value puts the secret in your shell history and in the process list; prefer stdin or --value-file',
      );
      return source.value;
    case 'file':
      // a file's exact content: a key file's final newline is part of it
      if (!context.input) throw usageError('--value-file cannot be read here');
      return context.input.readFile(source.path).catch((error: unknown) => {
        throw usageError(
          `--value-file ${source.path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      });
    case 'stdin': {
      if (!context.input) throw usageError('no stdin to read the value from: use --value-file');
      const text = await context.input.readStdin(`Value of ${command.secretName} (input hidden): `);
      // `echo "$TOKEN" |` ends the value with a newline it does not hold
      return text.replace(/\r?\n$/, '');
    }
  }
}
