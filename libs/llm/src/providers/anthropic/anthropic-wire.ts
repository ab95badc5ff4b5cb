import { z } from 'zod';

/** Tolerant readers for what we use of Anthropic Messages responses and stream events. */
export const AnthropicUsage = z.looseObject({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  cache_creation_input_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
});
export type AnthropicUsage = z.infer<typeof AnthropicUsage>;

export const AnthropicBlock = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() }),
  z.looseObject({
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
]);
export type AnthropicBlock = z.infer<typeof AnthropicBlock>;

export const AnthropicMessage = z.looseObject({
  id: z.string(),
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string() })),
  stop_reason: z.string().nullish(),
  usage: AnthropicUsage,
});
export type AnthropicMessage = z.infer<typeof AnthropicMessage>;

export const AnthropicEvent = z.looseObject({
  type: z.string(),
  index: z.number().nullish(),
  message: z.looseObject({ id: z.string(), model: z.string(), usage: AnthropicUsage }).nullish(),
  content_block: z.looseObject({ type: z.string() }).nullish(),
  delta: z
    .looseObject({
      type: z.string().nullish(),
      text: z.string().nullish(),
      thinking: z.string().nullish(),
      signature: z.string().nullish(),
      partial_json: z.string().nullish(),
      stop_reason: z.string().nullish(),
    })
    .nullish(),
  usage: AnthropicUsage.nullish(),
});
export type AnthropicEvent = z.infer<typeof AnthropicEvent>;
