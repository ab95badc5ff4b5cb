import { isSubjectToken } from '@flotilla/events';
import { expectPositionals } from './arg-values.js';
import type { OptionValues } from './cli-options.js';
import { usageError } from './errors.js';

/** The commands about the gateway rather than a conversation (usage's "Server"). */
export type ServerCommand =
  | { readonly name: 'info'; readonly json: boolean }
  | { readonly name: 'keys-create'; readonly tenant: string; readonly keyName: string; readonly json: boolean };

/** The command `name` (its first word: `keys create` is `keys-create`) from its arguments. */
export function serverCommandOf(name: 'info' | 'keys', rest: readonly string[], values: OptionValues): ServerCommand {
  switch (name) {
    case 'info':
      expectPositionals(name, rest, []);
      return { name, json: values.json ?? false };
    case 'keys': {
      if (rest[0] !== 'create' || rest.length !== 1)
        throw usageError('the keys command is: flotilla keys create --tenant T --name N');
      if (typeof values.tenant !== 'string' || !isSubjectToken(values.tenant))
        throw usageError('keys create needs --tenant: 1-64 characters of A-Z a-z 0-9 _ -');
      if (values.name === undefined || values.name.trim() === '')
        throw usageError('keys create needs --name, e.g. --name ci');
      return { name: 'keys-create', tenant: values.tenant, keyName: values.name, json: values.json ?? false };
    }
  }
}
