import { z } from 'zod';

/** Tolerant readers for what we use of Chat Completions responses and stream chunks. */
const ChatUsage = z.looseObject({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  prompt_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
  completion_tokens_details: z.looseObject({ reasoning_tokens: z.number().nullish() }).nullish(),
});
export type ChatUsage = z.infer<typeof ChatUsage>;

const ChatToolCall = z.looseObject({
  id: z.string(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

export const ChatCompletion = z.looseObject({
  id: z.string(),
  model: z.string(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z.array(ChatToolCall).nullish(),
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'choices must not be empty'),
  usage: ChatUsage.nullish(),
});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ChatChunk = z.looseObject({
  id: z.string(),
  model: z.string().nullish(),
  choices: z.array(
    z.looseObject({
      index: z.number().nullish(),
      delta: z
        .looseObject({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
          tool_calls: z
            .array(
              z.looseObject({
                index: z.number(),
                id: z.string().nullish(),
                function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
              }),
            )
            .nullish(),
        })
        .nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: ChatUsage.nullish(),
});
export type ChatChunk = z.infer<typeof ChatChunk>;
