import { z } from 'zod';
import { envelope, versionField } from './envelope.js';

/** A name an operator gives a template or a model profile: lowercase letters, digits, `-`, `_`, `.`. */
export const SpecName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'must be 1-64 characters of a-z 0-9 _ . -, starting with a letter or digit');
export type SpecName = z.infer<typeof SpecName>;

/**
 * An agent spec as the log carries it: a JSON object with its own `version`. What the object
 * holds is the agent spec's schema (libs/agent, published as `flotilla-agent-spec.v<N>.schema.json`),
 * versioned apart from the events, so the agent's settings can grow without a protocol version
 * for each; the writer (the gateway) validates a spec against it before appending it, and a
 * reader parses it with the version it names.
 */
export const AgentSpecDocument = z.looseObject({ version: z.number().int().positive() });
export type AgentSpecDocument = z.infer<typeof AgentSpecDocument>;

/**
 * The agent spec this conversation's steps follow from the next step on: the whole of it, resolved
 * (a template's and a model profile's settings filled in, defaults applied), never a secret's value
 * (a model key is a secret's name or a profile's). The first one is written with the conversation;
 * each later one (switching the model, the policy, the limits) replaces it whole.
 * Introduced in protocol version 3.
 */
export const AgentSpecEvent = z.strictObject({
  ...envelope,
  v: versionField('agent_spec', 3),
  type: z.literal('agent_spec'),
  spec: AgentSpecDocument,
  /** Why it was set, e.g. `conversation created`, `model switched by the user`. */
  reason: z.string().min(1).max(500),
  /** The operator-defined template it was made from, when one was named. */
  template: SpecName.optional(),
});
export type AgentSpecEvent = z.infer<typeof AgentSpecEvent>;
