import { SecretsError, SecretsErrorCode } from './errors.js';

/** A secret's name: an environment-variable name (the sandbox gets the secret as that variable). */
export const SECRET_NAME_PATTERN = /^[A-Z_][A-Z0-9_]{0,127}$/;

/**
 * Variables the sandbox's environment sets itself, or that change how every program in it runs:
 * a secret may not replace them (it would break or subvert the sandbox, and masking a value such
 * as a PATH would garble every path in the agent's output).
 */
const RESERVED_NAMES: ReadonlySet<string> = new Set([
  '_',
  'BASHOPTS',
  'BASH_ENV',
  'ENV',
  'HOME',
  'HOSTNAME',
  'IFS',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LOGNAME',
  'OLDPWD',
  'PATH',
  'PROMPT_COMMAND',
  'PS1',
  'PS2',
  'PS4',
  'PWD',
  'SHELL',
  'SHELLOPTS',
  'TERM',
  'TMPDIR',
  'TZ',
  'USER',
]);
/** Prefixes of reserved names: Flotilla's own settings, the dynamic loader's, bash's exported functions. */
const RESERVED_PREFIXES = ['FLOTILLA_', 'LD_', 'BASH_FUNC_'] as const;

/** Shorter values would mask ordinary text (every "abc" in the agent's output). */
export const MIN_SECRET_VALUE_CHARS = 4;
export const MAX_SECRET_VALUE_CHARS = 64 * 1024;

/** A lone surrogate: not Unicode, and not representable in the UTF-8 a value is stored as. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a name cannot be a secret's, or undefined when it can. The name itself is not secret. */
export function secretNameProblem(name: string): string | undefined {
  if (!SECRET_NAME_PATTERN.test(name)) {
    return 'a secret name is an environment-variable name: 1-128 characters of A-Z 0-9 _, not starting with a digit (e.g. GITHUB_TOKEN)';
  }
  if (RESERVED_NAMES.has(name))
    return `${name} is set by the sandbox itself and cannot be a secret; choose another name`;
  const prefix = RESERVED_PREFIXES.find((each) => name.startsWith(each));
  if (prefix) return `names starting with ${prefix} are reserved and cannot be secrets; choose another name`;
  return undefined;
}

export function assertSecretName(name: string): void {
  // a name that does not have the shape of one is never quoted: it may be a value pasted in its place
  const problem = secretNameProblem(name);
  if (problem) throw new SecretsError(SecretsErrorCode.InvalidName, problem);
}

/** Throws a SecretsError saying what is wrong with a value, without ever quoting it. */
export function assertSecretValue(value: string): void {
  const problem =
    typeof value !== 'string'
      ? 'a secret value is a string'
      : value.length < MIN_SECRET_VALUE_CHARS
        ? `a secret value needs at least ${MIN_SECRET_VALUE_CHARS} characters (shorter ones would mask ordinary text in the agent's output)`
        : value.length > MAX_SECRET_VALUE_CHARS
          ? `a secret value has at most ${MAX_SECRET_VALUE_CHARS} characters`
          : value.includes('\u0000')
            ? 'a secret value cannot hold a NUL character (an environment variable cannot)'
            : LONE_SURROGATE.test(value)
              ? 'a secret value must be well-formed Unicode (it holds a lone surrogate)'
              : undefined;
  if (problem) throw new SecretsError(SecretsErrorCode.InvalidValue, problem);
}
