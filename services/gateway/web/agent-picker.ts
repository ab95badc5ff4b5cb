import type { CreateConversationBody, ServerInfo } from '@flotilla/api';
import { byId, h, show } from './dom.js';

/** The agent fields of a create request. */
export type AgentChoice = Pick<CreateConversationBody, 'template' | 'spec'>;

/**
 * The new-conversation form's choice of agent, from the gateway's server info: one of the
 * operator's templates (or the deployment's default agent), and one of its model profiles over it
 * (or the template's own model). When there is nothing to choose, the model a new conversation
 * will use is still shown, as a line of text.
 */
export class AgentPicker {
  readonly #row = byId('new-agent');
  readonly #fixed = byId('new-agent-fixed');
  readonly #template = byId<HTMLSelectElement>('new-template');
  readonly #profile = byId<HTMLSelectElement>('new-profile');

  load(agents: ServerInfo['agents']): void {
    this.#template.replaceChildren(
      h('option', { value: '' }, `Default agent (${agents.default.model})`),
      ...agents.templates.map((template) =>
        h('option', { value: template.name }, `${template.name} (${template.model})`),
      ),
    );
    this.#profile.replaceChildren(
      h('option', { value: '' }, "The agent's own model"),
      ...agents.profiles.map((profile) =>
        h('option', { value: profile.name }, `${profile.name} (${profile.provider} ${profile.model})`),
      ),
    );
    const choosable = agents.templates.length > 0 || agents.profiles.length > 1;
    show(this.#row, choosable);
    this.#fixed.textContent = choosable ? '' : `Model: ${agents.default.model}`;
    show(this.#fixed, !choosable);
  }

  clear(): void {
    this.#template.replaceChildren();
    this.#profile.replaceChildren();
    show(this.#row, false);
    show(this.#fixed, false);
  }

  /** What the create request says of the agent: nothing for the defaults. */
  choice(): AgentChoice {
    const template = this.#template.value;
    const profile = this.#profile.value;
    return { ...(template ? { template } : {}), ...(profile ? { spec: { llm: { profile } } } : {}) };
  }
}
