import { describe, expect, it } from 'vitest';
import { resolveConnection } from './connection.js';

const file = (content: unknown) => () => JSON.stringify(content);
const none = () => undefined;

describe('resolveConnection', () => {
  it('prefers the flag, then the environment, then .flotilla/cli.json — setting by setting', () => {
    const config = file({ url: 'http://file:1', api_key: 'file-key' });
    expect(
      resolveConnection(
        { url: 'http://flag:1', apiKey: 'flag-key' },
        { FLOTILLA_URL: 'http://env:1', FLOTILLA_API_KEY: 'env-key' },
        config,
      ),
    ).toEqual({
      url: 'http://flag:1',
      apiKey: 'flag-key',
    });
    expect(resolveConnection({}, { FLOTILLA_URL: 'http://env:1', FLOTILLA_API_KEY: 'env-key' }, config)).toEqual({
      url: 'http://env:1',
      apiKey: 'env-key',
    });
    expect(resolveConnection({}, { FLOTILLA_URL: 'http://env:1' }, config)).toEqual({
      url: 'http://env:1',
      apiKey: 'file-key',
    });
    expect(resolveConnection({}, {}, config)).toEqual({ url: 'http://file:1', apiKey: 'file-key' });
  });

  it('does not read the file when flags and environment suffice', () => {
    const explode = () => {
      throw new Error('read');
    };
    expect(resolveConnection({ url: 'https://gw', apiKey: 'k' }, {}, explode)).toEqual({
      url: 'https://gw',
      apiKey: 'k',
    });
  });

  it('says where a missing setting can come from', () => {
    expect(() => resolveConnection({}, {}, none)).toThrow(
      /no gateway URL: pass --url, set FLOTILLA_URL, or write .* \.flotilla\/cli\.json/,
    );
    expect(() => resolveConnection({ url: 'http://gw' }, { FLOTILLA_API_KEY: ' ' }, none)).toThrow(
      /no API key: pass --api-key, set FLOTILLA_API_KEY/,
    );
  });

  it('rejects a URL that is not http(s) and a config file that is not a JSON object of strings', () => {
    expect(() => resolveConnection({ url: 'ws://gw', apiKey: 'k' }, {}, none)).toThrow(/not an http\(s\) URL/);
    expect(() => resolveConnection({}, {}, () => '{"url": ')).toThrow(/\.flotilla\/cli\.json is not valid JSON/);
    expect(() => resolveConnection({}, {}, file(['x']))).toThrow(/must hold a JSON object/);
    expect(() => resolveConnection({}, {}, file({ url: 8080 }))).toThrow(/"url" must be a string/);
  });
});
