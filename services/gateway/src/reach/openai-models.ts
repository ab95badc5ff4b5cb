// What a request's `model` may name: one of the operator's templates (preferred) or model
// profiles, as the tenant's `GET /v1/server-info` lists them. `template:<name>` and
// `profile:<name>` say which when a template and a profile share a name.
import type { ServerInfo } from '@flotilla/api';
import { OpenAiError } from './openai-errors.js';

/** The agent a new conversation gets: a template, or the default spec on a profile's model. */
export type AgentChoice = { readonly template: string } | { readonly profile: string };

/** A `model` as `GET /v1/models` lists it (OpenAI's Model object). */
export type ModelEntry = {
  readonly id: string;
  readonly object: 'model';
  /** Templates and profiles have no creation time: 0. */
  readonly created: 0;
  readonly owned_by: 'flotilla-template' | 'flotilla-profile';
};

type Agents = Pick<ServerInfo['agents'], 'templates' | 'profiles'>;

/** The agent `model` names, or a 404 `model_not_found` listing what it may name. */
export function agentChoiceOf(model: string, agents: Agents): AgentChoice {
  const templates = new Set(agents.templates.map((template) => template.name));
  const profiles = new Set(agents.profiles.map((profile) => profile.name));
  const [prefix, ...rest] = model.split(':');
  const named = rest.join(':');
  if (prefix === 'template' && rest.length > 0 && templates.has(named)) return { template: named };
  if (prefix === 'profile' && rest.length > 0 && profiles.has(named)) return { profile: named };
  if (templates.has(model)) return { template: model };
  if (profiles.has(model)) return { profile: model };
  const known = modelEntries(agents).map((entry) => entry.id);
  throw new OpenAiError(
    404,
    'model_not_found',
    `The model "${model}" does not exist: name one of the operator's templates or profiles (${known.join(', ') || 'none'}; GET /v1/models lists them).`,
    'model',
  );
}

/** Every name `model` may take: each template by its name, each profile by its own unless a template has it (then `profile:<name>`). */
export function modelEntries(agents: Agents): ModelEntry[] {
  const templates = new Set(agents.templates.map((template) => template.name));
  return [
    ...agents.templates.map((template) => entry(template.name, 'flotilla-template')),
    ...agents.profiles.map((profile) =>
      entry(templates.has(profile.name) ? `profile:${profile.name}` : profile.name, 'flotilla-profile'),
    ),
  ];
}

/** The model `model` names, as `GET /v1/models/{model}` answers (404 `model_not_found` as agentChoiceOf). */
export function modelEntryOf(model: string, agents: Agents): ModelEntry {
  return entry(model, 'template' in agentChoiceOf(model, agents) ? 'flotilla-template' : 'flotilla-profile');
}

const entry = (id: string, owner: ModelEntry['owned_by']): ModelEntry => ({
  id,
  object: 'model',
  created: 0,
  owned_by: owner,
});
