import { z } from 'zod';
import { CondenserError } from './errors.js';

/**
 * How and when a conversation's view is condensed. Serialisable: it can live in agent settings
 * and travel between services.
 */
export const CondenserConfig = z
  .strictObject({
    /** Soft trigger: condense when the view holds more items than this (system prompt included). */
    maxEvents: z.number().int().min(8).default(120),
    /**
     * Hard trigger: condense when the view's estimated prompt tokens exceed this. The effective
     * limit is the stricter of this and the agent model's maxInputTokens, when either is known.
     */
    maxTokens: z.number().int().positive().optional(),
    /** Items kept verbatim right after the system prompt (typically the task). */
    keepFirst: z.number().int().nonnegative().default(2),
    /** A condensation forgets at least this share of the condensable view (items or tokens). */
    minimumProgress: z.number().gt(0).max(1).default(0.1),
    /** Output budget of the summary call; also the room reserved for the summary when planning. */
    summaryMaxOutputTokens: z.number().int().positive().default(2_048),
    /** Characters of one forgotten event shown to the summarizer before it is cut in the middle. */
    maxEventChars: z.number().int().min(100).default(10_000),
    /** Summary calls tried when the summarizer's context overflows, each with 20% shorter event texts. */
    maxSummaryAttempts: z.number().int().min(1).max(30).default(8),
  })
  .refine((config) => config.keepFirst + 2 <= Math.floor(config.maxEvents / 2), {
    message: 'keepFirst must leave room to halve the view: keepFirst + 2 <= maxEvents / 2',
    path: ['keepFirst'],
  });
export type CondenserConfig = z.infer<typeof CondenserConfig>;
export type CondenserConfigInput = z.input<typeof CondenserConfig>;

/** Validates a configuration, filling in defaults; throws a CondenserError naming every bad field. */
export function parseCondenserConfig(input: unknown = {}): CondenserConfig {
  const parsed = CondenserConfig.safeParse(input);
  if (!parsed.success) {
    throw new CondenserError('invalid_config', `invalid condenser configuration:\n${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  return Object.freeze(parsed.data);
}
