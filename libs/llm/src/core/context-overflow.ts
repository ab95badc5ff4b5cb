/**
 * Phrases providers use when the prompt does not fit the context window:
 * OpenAI, Anthropic, vLLM, llama.cpp, Ollama, LiteLLM-style proxies.
 */
const CONTEXT_OVERFLOW_PATTERNS: readonly RegExp[] = [
  /context_length_exceeded/i,
  /maximum context length/i,
  /prompt is too long/i,
  /exceeds? (?:the )?(?:model'?s? )?(?:maximum )?context (?:window|length|limit|size)/i,
  /exceed context limit/i,
  /context window (?:is )?(?:exceeded|too small)/i,
  /maximum model length/i,
  /exceed_context_size/i,
  /exceeds? the available context size/i,
  /input (?:is )?too long/i,
  /too many (?:input )?tokens/i,
  /request too large/i,
  /(?:prompt|input) (?:length|tokens?) [^.]{0,40}exceeds?/i,
];

export function isContextOverflowMessage(text: string): boolean {
  return CONTEXT_OVERFLOW_PATTERNS.some((pattern) => pattern.test(text));
}
