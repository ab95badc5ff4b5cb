// The body of `POST /v1/chat/completions` as this endpoint takes it: OpenAI's Chat Completions
// request, text only. Fields that would change what the answer means (tools, formats, stops,
// several choices, images, audio) are refused by name; sampling settings the agent's own spec
// decides are taken and ignored (docs/api.md).
import { z } from 'zod';
import { OpenAiError } from './openai-errors.js';

/** One part of a message's content: text is taken, anything else (images, audio, files) refused with a reason. */
const ContentPart = z.looseObject({ type: z.string() }).transform((part, context) => {
  if (part.type === 'text' && typeof part['text'] === 'string') return part['text'];
  if (part.type === 'refusal' && typeof part['refusal'] === 'string') return part['refusal'];
  context.addIssue({
    code: 'custom',
    message:
      part.type === 'text'
        ? 'a text part needs its "text" as a string'
        : `"${part.type}" parts are not supported: this endpoint takes text only (send images through the REST API's messages)`,
  });
  return z.NEVER;
});

/** A message's content: a string or text parts, joined by newlines. */
const Content = z
  .union([z.string(), z.array(ContentPart).max(100)])
  .transform((content) => (typeof content === 'string' ? content : content.join('\n')));

const Name = z.string().min(1).max(64).optional();

const InstructionMessage = z.strictObject({ role: z.enum(['system', 'developer']), content: Content, name: Name });
const UserMessage = z.strictObject({ role: z.literal('user'), content: Content, name: Name });
const ToolCall = z.strictObject({
  id: z.string().max(256),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().max(256), arguments: z.string() }),
});
const AssistantMessage = z.strictObject({
  role: z.literal('assistant'),
  content: Content.nullish(),
  name: Name,
  refusal: z.string().nullish(),
  tool_calls: z.array(ToolCall).max(128).optional(),
});
const ToolMessage = z.strictObject({ role: z.literal('tool'), content: Content, tool_call_id: z.string().max(256) });

export const ChatMessage = z.discriminatedUnion(
  'role',
  [InstructionMessage, UserMessage, AssistantMessage, ToolMessage],
  {
    error: 'role must be one of system, developer, user, assistant, tool',
  },
);
export type ChatMessage = z.infer<typeof ChatMessage>;

const Sampling = (min: number, max: number) => z.number().min(min).max(max).nullish();

/** The request, as far as it is taken; ignored fields are only checked for their type. */
export const ChatCompletionRequest = z.strictObject({
  model: z.string().min(1).max(256),
  messages: z.array(ChatMessage).min(1).max(1_000),
  stream: z.boolean().nullish(),
  stream_options: z
    .strictObject({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() })
    .nullish(),
  /** An end-user id for the caller's own records: taken and ignored. */
  user: z.string().max(256).optional(),
  temperature: Sampling(0, 2),
  top_p: Sampling(0, 1),
  presence_penalty: Sampling(-2, 2),
  frequency_penalty: Sampling(-2, 2),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  seed: z.number().int().nullish(),
  /** Meaningless without `tools`, which are refused. */
  parallel_tool_calls: z.boolean().nullish(),
  n: z.literal(1, 'n: this endpoint answers with one choice').nullish(),
  logprobs: z.literal(false, 'logprobs are not available: the answer is the agent’s, not one model call’s').nullish(),
  response_format: z
    .strictObject({ type: z.literal('text', 'response_format: only {"type": "text"} is supported') })
    .nullish(),
  modalities: z.array(z.literal('text', 'modalities: only "text" is supported')).nullish(),
});

/** Fields refused whenever they carry a value, and why (a client's null or empty list is no value). */
const REFUSED: Readonly<Record<string, string>> = {
  tools: "the agent runs with its own tools (its template's); a request cannot bring tools",
  tool_choice: 'the agent chooses among its own tools; a request cannot steer them',
  functions: "the agent runs with its own tools (its template's); a request cannot bring functions",
  function_call: 'the agent chooses among its own tools; a request cannot steer them',
  stop: 'stop sequences would cut the agent’s answer; they are not supported',
  logit_bias: 'the answer is the agent’s, not one model call’s: logit_bias is not supported',
  top_logprobs: 'logprobs are not available: the answer is the agent’s, not one model call’s',
  audio: 'this endpoint answers with text only',
  prediction: 'predicted outputs are not supported',
  web_search_options: 'the agent searches with its own tools, if its template has them',
};

/** What the endpoint takes from a request. */
export type ChatRequest = {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage. */
  readonly includeUsage: boolean;
};

/** The request body, or a 400 in OpenAI's shape naming the first bad field (`param`). */
export function parseChatRequest(body: unknown): ChatRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw OpenAiError.invalid('The body must be a JSON object (a Chat Completions request).', null);
  for (const [field, value] of Object.entries(body)) {
    const reason = REFUSED[field];
    if (reason !== undefined && !isNoValue(value)) throw OpenAiError.invalid(`${field}: ${reason}.`, field);
  }
  const present = Object.fromEntries(Object.entries(body).filter(([field]) => REFUSED[field] === undefined));
  const result = ChatCompletionRequest.safeParse(present);
  if (!result.success) {
    const issue = deepestIssue(result.error.issues[0]!);
    const param = issue.path.map(String).join('.') || null;
    const message =
      issue.code === 'unrecognized_keys'
        ? `unsupported field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}${param ? ` in ${param}` : ''}: docs/api.md lists the fields this endpoint takes`
        : `${param ?? 'body'}: ${issue.message}`;
    throw OpenAiError.invalid(message, param);
  }
  const request = result.data;
  if (!request.stream && request.stream_options)
    throw OpenAiError.invalid('stream_options: only allowed when stream is true.', 'stream_options');
  return {
    model: request.model,
    messages: request.messages,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
  };
}

/** Of a union's failure, the issue of the branch that got furthest (an image part rather than "not a string"). */
function deepestIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  const branches = issue.errors.flat().map((inner) => deepestIssue({ ...inner, path: [...issue.path, ...inner.path] }));
  return branches.reduce((deepest, inner) => (inner.path.length > deepest.path.length ? inner : deepest));
}

const isNoValue = (value: unknown): boolean =>
  value === null ||
  value === undefined ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && Object.keys(value).length === 0);
