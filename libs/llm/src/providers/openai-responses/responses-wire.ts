import { z } from 'zod';

/** Tolerant readers for what we use of Responses API objects and stream events. */
export const ResponsesUsage = z.looseObject({
  input_tokens: z.number(),
  output_tokens: z.number(),
  input_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
  output_tokens_details: z.looseObject({ reasoning_tokens: z.number().nullish() }).nullish(),
});

export const ReasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string(),
  summary: z.array(z.looseObject({ text: z.string() })).nullish(),
  content: z.array(z.looseObject({ text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});

export const MessageItem = z.looseObject({
  type: z.literal('message'),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().nullish(), refusal: z.string().nullish() })),
});

export const FunctionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});

export const ResponseObject = z.looseObject({
  id: z.string(),
  model: z.string(),
  status: z.string().nullish(),
  output: z.array(z.looseObject({ type: z.string() })),
  usage: ResponsesUsage.nullish(),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
  error: z.looseObject({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});
export type ResponseObject = z.infer<typeof ResponseObject>;

export const ResponsesEvent = z.looseObject({
  type: z.string(),
  delta: z.string().nullish(),
  output_index: z.number().nullish(),
  item: z.looseObject({ type: z.string(), call_id: z.string().nullish(), name: z.string().nullish() }).nullish(),
  response: z.unknown().optional(),
  code: z.string().nullish(),
  message: z.string().nullish(),
});
