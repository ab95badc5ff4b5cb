import { LlmError } from './errors.js';

export type ApiKeySource = {
  /** Explicit key (factory option or config); wins over the environment. */
  readonly explicit?: string;
  readonly variable: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly provider: string;
};

/** Explicit option > environment variable > an `invalid_config` error naming the variable. */
export function loadApiKey(source: ApiKeySource): string {
  if (source.explicit !== undefined && source.explicit.length > 0) return source.explicit;
  const fromEnv = source.env[source.variable];
  if (fromEnv !== undefined && fromEnv.trim().length > 0) return fromEnv.trim();
  throw new LlmError(
    'invalid_config',
    `No API key for ${source.provider}: set the ${source.variable} environment variable or pass apiKey explicitly.`,
    { provider: source.provider },
  );
}

/** What is sent as the key to an endpoint that takes none (`apiKeyEnv: false`): the SDKs require one. */
export const NO_API_KEY = 'none';

/** The variable a provider's key is read from by default (its SDK's own). */
export function defaultApiKeyVariable(provider: string): string {
  return provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
}
