import { OpenAI } from 'openai';
import { httpFetchFor } from '../core/http-fetch.js';
import { nestFlatErrorFetch } from './nest-flat-error-fetch.js';

export type OpenAIClientSettings = {
  readonly apiKey: string;
  readonly baseURL?: string;
  readonly fetch?: typeof fetch;
};

/**
 * An OpenAI SDK client whose own retries and logging are off: ours are the only policy. Without a
 * `fetch` of its own it goes through the proxies the process environment names now (HTTPS_PROXY,
 * HTTP_PROXY, NO_PROXY).
 */
export function createOpenAIClient(settings: OpenAIClientSettings): OpenAI {
  return new OpenAI({
    apiKey: settings.apiKey,
    ...(settings.baseURL === undefined ? {} : { baseURL: settings.baseURL }),
    fetch: nestFlatErrorFetch(settings.fetch ?? httpFetchFor(process.env)),
    maxRetries: 0,
    // Timeouts are enforced per attempt by the managed model, streaming included.
    timeout: 24 * 60 * 60 * 1000,
    logLevel: 'off',
  });
}

/** True when the client talks to api.openai.com rather than an OpenAI-compatible server. */
export function isOfficialOpenAI(baseURL: string | undefined): boolean {
  return baseURL === undefined || /^https:\/\/api\.openai\.com(?:\/|$)/.test(baseURL);
}
