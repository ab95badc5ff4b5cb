import { FlotillaApiError, type FlotillaClient } from '@flotilla/client';
import { byId, h, show } from './dom.js';

/** The same rule the gateway applies (reserved names aside, which it refuses with a message). */
const NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;

export type SecretsPanelHooks = {
  /** A request failed: tell the user. */
  onError(error: unknown): void;
};

/**
 * The open conversation's secrets: their names (and the tenant defaults it inherits), a form to
 * set one (the value in a password field, cleared once sent) and a Remove button per name.
 * Values go to the gateway and are never shown: there is no API that returns one.
 */
export class SecretsPanel {
  readonly #count = byId('secrets-count');
  readonly #list = byId<HTMLUListElement>('secrets-list');
  readonly #note = byId('secrets-note');
  readonly #form = byId<HTMLFormElement>('secret-form');
  readonly #name = byId<HTMLInputElement>('secret-name');
  readonly #value = byId<HTMLInputElement>('secret-value');
  readonly #submit = this.#form.querySelector<HTMLButtonElement>('button[type="submit"]')!;

  #id: string | undefined;
  /** Whether each client's gateway has secrets at all (its server info), asked once per client. */
  readonly #available = new WeakMap<FlotillaClient, Promise<boolean>>();
  /** Answers for a conversation that is no longer open are dropped. */
  #generation = 0;
  #busy = false;

  constructor(
    readonly client: () => FlotillaClient,
    readonly hooks: SecretsPanelHooks,
  ) {
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.#set();
    });
  }

  open(id: string): void {
    this.#id = id;
    this.#generation += 1;
    this.#list.replaceChildren();
    this.#count.textContent = '';
    this.#value.value = '';
    this.#showNote(undefined);
    void this.refresh();
  }

  close(): void {
    this.#id = undefined;
    this.#generation += 1;
    this.#value.value = '';
  }

  #notConfigured(): void {
    this.#render([], []);
    this.#showNote('Secrets are not configured on this gateway: its operator sets FLOTILLA_SECRETS_KEY_FILE.');
    this.#enable(false);
  }

  /** Reload the names (after a secret_changed event, or a change made here). */
  async refresh(): Promise<void> {
    const id = this.#id;
    if (!id) return;
    const generation = this.#generation;
    const client = this.client();
    let available = this.#available.get(client);
    if (!available) {
      available = client.serverInfo().then(
        (info) => info.capabilities.secrets,
        () => true,
      );
      this.#available.set(client, available);
    }
    if (!(await available)) {
      if (generation !== this.#generation) return;
      this.#notConfigured();
      return;
    }
    let own: string[];
    let inherited: string[];
    try {
      [own, inherited] = await Promise.all([
        this.client().listConversationSecrets(id),
        this.client().listTenantSecrets(),
      ]);
    } catch (error) {
      if (generation !== this.#generation) return;
      if (error instanceof FlotillaApiError && error.code === 'secrets_not_configured') {
        this.#notConfigured();
        return;
      }
      this.hooks.onError(error);
      return;
    }
    if (generation !== this.#generation) return;
    this.#enable(true);
    this.#render(
      own,
      inherited.filter((name) => !own.includes(name)),
    );
  }

  #render(own: readonly string[], inherited: readonly string[]): void {
    this.#count.textContent = own.length + inherited.length > 0 ? `(${own.length + inherited.length})` : '';
    this.#list.replaceChildren(
      ...own.map((name) => {
        const remove = h(
          'button',
          { type: 'button', class: 'link-button', 'data-testid': 'secret-remove', 'aria-label': `Remove ${name}` },
          'Remove',
        );
        remove.addEventListener('click', () => this.#remove(name));
        return h('li', { 'data-testid': 'secret', 'data-name': name }, h('code', {}, name), remove);
      }),
      ...inherited.map((name) =>
        h(
          'li',
          {
            class: 'inherited',
            'data-testid': 'secret-inherited',
            'data-name': name,
            title: 'A default of your tenant',
          },
          h('code', {}, name),
          h('span', { class: 'muted' }, 'tenant'),
        ),
      ),
    );
    this.#showNote(own.length + inherited.length === 0 ? 'No secrets yet.' : undefined);
  }

  #set(): void {
    const id = this.#id;
    const name = this.#name.value.trim();
    const value = this.#value.value;
    if (!id || this.#busy) return;
    if (!NAME.test(name)) {
      this.#showNote(
        'A name is an environment-variable name: A-Z 0-9 _, not starting with a digit (e.g. GITHUB_TOKEN).',
      );
      this.#name.focus();
      return;
    }
    this.#run(async () => {
      await this.client().setConversationSecret(id, name, value);
      if (this.#id === id) {
        this.#value.value = '';
        this.#name.value = '';
      }
    });
  }

  #remove(name: string): void {
    const id = this.#id;
    if (id) this.#run(() => this.client().removeConversationSecret(id, name));
  }

  #run(action: () => Promise<void>): void {
    this.#busy = true;
    this.#submit.disabled = true;
    action()
      .then(() => this.refresh())
      .catch((error: unknown) => this.hooks.onError(error))
      .finally(() => {
        this.#busy = false;
        this.#submit.disabled = false;
      });
  }

  #enable(enabled: boolean): void {
    for (const element of [this.#name, this.#value, this.#submit]) element.disabled = !enabled;
  }

  #showNote(text: string | undefined): void {
    this.#note.textContent = text ?? '';
    show(this.#note, text !== undefined);
  }
}
