import { isSubjectToken, SecretName } from '@flotilla/events';
import { usageError } from './errors.js';

/** Whose secrets: one conversation's own, or the tenant's defaults (the tenant of the API key). */
export type SecretTarget = { readonly conversation: string } | { readonly tenant: true };

/** Where `secret set` reads the value: stdin (the default), a file, or (discouraged) the command line. */
export type SecretValueSource =
  | { readonly kind: 'stdin' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'argument'; readonly value: string };

export type SecretCommand =
  | {
      readonly name: 'secret-set';
      readonly target: SecretTarget;
      readonly secretName: string;
      readonly source: SecretValueSource;
    }
  | { readonly name: 'secret-rm'; readonly target: SecretTarget; readonly secretName: string }
  | { readonly name: 'secret-ls'; readonly target: SecretTarget; readonly json: boolean };

export type SecretFlags = {
  readonly tenant?: boolean;
  readonly value?: string;
  readonly valueFile?: string;
  readonly json?: boolean;
};

const SHAPE =
  'the secret command is: flotilla secret set|rm|ls ID [NAME], or flotilla secret set|rm|ls --tenant [NAME] for the defaults of your tenant';

/** `secret set|rm|ls …` (the words after `secret`). Never quotes a NAME that is not one: it may be a value typed in its place. */
export function secretCommandOf(rest: readonly string[], flags: SecretFlags): SecretCommand {
  const [sub, ...words] = rest;
  if (sub !== 'set' && sub !== 'rm' && sub !== 'ls') throw usageError(SHAPE);
  if (sub !== 'set' && (flags.value !== undefined || flags.valueFile !== undefined))
    throw usageError(`secret ${sub} does not take --value or --value-file`);
  if (sub !== 'ls' && flags.json) throw usageError(`secret ${sub} does not take --json`);
  const wanted = (flags.tenant ? [] : ['ID']).concat(sub === 'ls' ? [] : ['NAME']);
  if (words.length !== wanted.length) {
    const example = flags.tenant
      ? `flotilla secret ${sub} --tenant${sub === 'ls' ? '' : ' GITHUB_TOKEN'}`
      : `flotilla secret ${sub} my-conversation${sub === 'ls' ? '' : ' GITHUB_TOKEN'}`;
    throw usageError(
      `secret ${sub}${flags.tenant ? ' --tenant' : ''} needs ${wanted.join(' and ') || 'no argument'}, e.g. ${example}`,
    );
  }
  let target: SecretTarget;
  if (flags.tenant) {
    target = { tenant: true };
  } else {
    const id = words.shift()!;
    if (!isSubjectToken(id))
      throw usageError(`ID "${id}" is not a conversation id: 1-64 characters of A-Z a-z 0-9 _ -`);
    target = { conversation: id };
  }
  if (sub === 'ls') return { name: 'secret-ls', target, json: flags.json ?? false };
  const secretName = words[0]!;
  if (!SecretName.safeParse(secretName).success)
    throw usageError(
      'NAME must be an environment-variable name: 1-128 characters of A-Z 0-9 _, not starting with a digit (e.g. GITHUB_TOKEN)',
    );
  if (sub === 'rm') return { name: 'secret-rm', target, secretName };
  if (flags.value !== undefined && flags.valueFile !== undefined)
    throw usageError('give the value with --value-file or --value, not both');
  const source: SecretValueSource =
    flags.valueFile !== undefined
      ? { kind: 'file', path: flags.valueFile }
      : flags.value !== undefined
        ? { kind: 'argument', value: flags.value }
        : { kind: 'stdin' };
  return { name: 'secret-set', target, secretName, source };
}
