/**
 * Provider-neutral chat messages: what the view projection produces and every
 * provider adapter consumes. Adapters translate these to the OpenAI Chat
 * Completions, OpenAI Responses and Anthropic Messages wire formats.
 */

export type TextPart = { readonly type: 'text'; readonly text: string };
export type ImagePart = {
  readonly type: 'image';
  /** Either an https URL or base64 data with its media type. */
  readonly url?: string;
  readonly data?: string;
  readonly mediaType?: string;
  /**
   * An image whose bytes are stored apart (the images bucket): what a provider is sent once
   * `withStoredImages` has read them into `data`. A provider adapter refuses one without `data`.
   */
  readonly stored?: StoredImageRef;
};

/** A stored image as a conversation's log names it. */
export type StoredImageRef = { readonly sha256: string; readonly bytes: number; readonly name?: string };
export type ContentPart = TextPart | ImagePart;

/**
 * What an image weighs in a provider-independent token estimate, in characters (about 750
 * tokens at four characters a token: a 1024×1024 image is about 765 on OpenAI, its bytes never count).
 */
export const IMAGE_ESTIMATE_CHARACTERS = 3_000;

/** A block of the system prompt. `cache: true` marks the static, cacheable prefix. */
export type SystemBlock = { readonly text: string; readonly cache: boolean };

export type ToolCall = {
  /** The provider's tool call id, echoed back in the matching tool result. */
  readonly id: string;
  readonly name: string;
  /** Raw JSON arguments exactly as the model produced them. */
  readonly arguments: string;
};

/** Anthropic extended-thinking blocks, kept verbatim so they can be replayed with their signature. */
export type ThinkingBlock =
  | { readonly type: 'thinking'; readonly thinking: string; readonly signature: string }
  | { readonly type: 'redacted_thinking'; readonly data: string };

/** Reasoning the model returned, kept so it can be replayed to the same provider. */
export type Reasoning = {
  /** Plain reasoning text (OpenAI-compatible `reasoning_content`, Responses summaries). */
  readonly text?: string;
  readonly thinkingBlocks?: readonly ThinkingBlock[];
  /** OpenAI Responses reasoning items (id and encrypted content) for stateless replay. */
  readonly items?: readonly {
    readonly id: string;
    readonly encryptedContent?: string;
    readonly summary?: readonly string[];
  }[];
};

export type SystemMessage = { readonly role: 'system'; readonly content: readonly SystemBlock[] };
export type UserMessage = { readonly role: 'user'; readonly content: readonly ContentPart[] };
export type AssistantMessage = {
  readonly role: 'assistant';
  readonly content: readonly ContentPart[];
  readonly toolCalls: readonly ToolCall[];
  readonly reasoning?: Reasoning;
  readonly responseId?: string;
};
export type ToolMessage = {
  readonly role: 'tool';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly content: readonly ContentPart[];
  readonly isError?: boolean;
};

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A tool offered to the model: name, description and a JSON Schema for its arguments. */
export type ToolSchema = {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
};
