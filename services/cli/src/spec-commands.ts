import type { Command } from './args.js';
import type { CliClient } from './cli-client.js';
import { usageError } from './errors.js';
import { renderSpec } from './format-spec.js';
import type { SecretInput } from './secret-commands.js';
import { specFieldsOf, specFileFields } from './spec-args.js';
import type { Terminal } from './terminal.js';

export type SpecContext = { readonly out: Terminal; readonly input?: SecretInput };

/**
 * `spec ID` shows the spec in force; with `--template`, `--set` or `--spec FILE` it changes it
 * from the next step on (PATCH …/spec), and `model ID PROFILE` switches the model to a profile's.
 * Prints the spec the gateway made (after a change: the new one).
 */
export async function executeSpecCommand(
  command: Extract<Command, { name: 'spec' | 'model' }>,
  client: CliClient,
  context: SpecContext,
): Promise<void> {
  const { out } = context;
  if (command.name === 'model') {
    const updated = await client.updateSpec(command.id, {
      spec: { llm: { profile: command.profile } },
      reason: command.reason ?? `model switched to the profile ${command.profile}`,
    });
    out.lines(renderSpec(updated));
    return;
  }
  const fromFile =
    command.specFile === undefined
      ? {}
      : specFileFields(await readInputFile(command.specFile, '--spec', context), command.specFile);
  const fromSettings = specFieldsOf(command.settings);
  const both = Object.keys(fromSettings).filter((key) => key in fromFile);
  if (both.length > 0) throw usageError(`--set ${both[0]}… and --spec both give the field ${both[0]}: give it once`);
  const fields = { ...fromFile, ...fromSettings };
  const changes = command.template !== undefined || Object.keys(fields).length > 0;
  if (!changes) {
    const current = await client.getSpec(command.id);
    out.lines(command.json ? [JSON.stringify(current, null, 2)] : renderSpec(current));
    return;
  }
  const updated = await client.updateSpec(command.id, {
    ...(command.template === undefined ? {} : { template: command.template }),
    ...(Object.keys(fields).length === 0 ? {} : { spec: fields }),
    ...(command.reason === undefined ? {} : { reason: command.reason }),
  });
  out.lines(renderSpec(updated));
}

/** The text of a file a flag names (`--spec FILE`), or a usage error saying why it could not be read. */
export async function readInputFile(
  path: string,
  flag: string,
  context: { readonly input?: SecretInput },
): Promise<string> {
  if (!context.input) throw usageError(`${flag} cannot read files here`);
  try {
    return await context.input.readFile(path);
  } catch (error) {
    throw usageError(`${flag} ${path}: ${(error as Error).message}`);
  }
}
