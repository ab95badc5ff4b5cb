/**
 * Some OpenAI-compatible servers (older vLLM, others) answer errors with a flat
 * `{"object":"error","message":…}` body; the OpenAI SDK only reads `{"error":{…}}` and would drop the
 * message we need to classify the error (e.g. context overflow). This fetch wrapper nests it.
 */
export function nestFlatErrorFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    if (response.ok || !(response.headers.get('content-type') ?? '').includes('json')) return response;
    const text = await response.text();
    return new Response(nested(text), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function nested(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === 'object' && body !== null && !('error' in body) && 'message' in body)
      return JSON.stringify({ error: body });
  } catch {
    // not JSON after all: pass it through untouched
  }
  return text;
}
