const STORAGE_KEY = 'flotilla.apiKey';

/** The page's fragment as key=value pairs: `#key=…` (an API key to adopt) and `#c=…` (a conversation). */
export function readFragment(): URLSearchParams {
  return new URLSearchParams(location.hash.replace(/^#/, ''));
}

/** Replace the fragment without a history entry (used to drop a key from the address bar). */
export function writeFragment(params: URLSearchParams, push = false): void {
  const fragment = params.toString();
  const url = `${location.pathname}${location.search}${fragment ? `#${fragment}` : ''}`;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

/**
 * Takes an API key from the fragment (`#key=…`) into local storage and removes it from the
 * address bar, so it stays out of history and shared links. Returns the key it took.
 */
export function adoptKeyFromFragment(): string | undefined {
  const params = readFragment();
  const key = params.get('key')?.trim();
  if (key === undefined) return undefined;
  params.delete('key');
  writeFragment(params);
  if (key === '') return undefined;
  saveKey(key);
  return key;
}

export function loadKey(): string | undefined {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? undefined;
  } catch {
    return undefined; // storage disabled: the user types the key each visit
  }
}

export function saveKey(key: string): void {
  try {
    localStorage.setItem(STORAGE_KEY, key);
  } catch {
    // storage disabled: the key lives for this page only
  }
}

export function forgetKey(): void {
  try {
    localStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}
