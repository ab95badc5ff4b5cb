import type { ConnectionFlags } from './args.js';
import { CliError, CliErrorCode } from './errors.js';

/** Where the gateway is and the key to use. */
export type Connection = { readonly url: string; readonly apiKey: string };

/** `./dev up` writes it into its home directory: `$FLOTILLA_HOME`, by default `.flotilla` in the current directory. */
export const CONFIG_FILE = '.flotilla/cli.json';

export function configFile(env: Readonly<Record<string, string | undefined>>): string {
  const home = nonEmpty(env['FLOTILLA_HOME']);
  return home === undefined ? CONFIG_FILE : `${home.replace(/\/+$/, '')}/cli.json`;
}

type ConfigFile = { readonly url?: string; readonly api_key?: string };

/**
 * Each setting from its flag, else its environment variable, else the config file. The file is
 * read (by `readConfig`, which returns undefined when there is none) only when it is needed.
 */
export function resolveConnection(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
  readConfig: () => string | undefined,
): Connection {
  let file: ConfigFile | undefined;
  const fromFile = (): ConfigFile => (file ??= parseConfig(readConfig()));
  const url = nonEmpty(flags.url) ?? nonEmpty(env['FLOTILLA_URL']) ?? nonEmpty(fromFile().url);
  if (url === undefined) {
    throw config(
      `no gateway URL: pass --url, set FLOTILLA_URL, or write {"url": "http://127.0.0.1:8080", "api_key": "…"} to ${CONFIG_FILE}`,
    );
  }
  if (!isHttpUrl(url)) throw config(`gateway URL "${url}" is not an http(s) URL, e.g. http://127.0.0.1:8080`);
  const apiKey = nonEmpty(flags.apiKey) ?? nonEmpty(env['FLOTILLA_API_KEY']) ?? nonEmpty(fromFile().api_key);
  if (apiKey === undefined)
    throw config(`no API key: pass --api-key, set FLOTILLA_API_KEY, or put "api_key" in ${CONFIG_FILE}`);
  return { url, apiKey };
}

function parseConfig(text: string | undefined): ConfigFile {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw config(`${CONFIG_FILE} is not valid JSON (${(error as Error).message}); fix or remove it`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw config(`${CONFIG_FILE} must hold a JSON object like {"url": "…", "api_key": "…"}`);
  const { url, api_key: apiKey } = value as Record<string, unknown>;
  for (const [key, field] of [
    ['url', url],
    ['api_key', apiKey],
  ] as const) {
    if (field !== undefined && typeof field !== 'string') throw config(`${CONFIG_FILE}: "${key}" must be a string`);
  }
  return {
    ...(url === undefined ? {} : { url: url as string }),
    ...(apiKey === undefined ? {} : { api_key: apiKey as string }),
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function config(message: string): CliError {
  return new CliError(CliErrorCode.Config, message);
}
