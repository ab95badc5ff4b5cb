import type { Event } from '@flotilla/events';
import { byId, h } from './dom.js';

type SpecEvent = Extract<Event, { type: 'agent_spec' }>;

/**
 * The open conversation's agent spec in force, as its log says: the last `agent_spec` event of
 * its stream (each change is one), with its model, tools, template and policies. A conversation
 * whose log has none runs the deployment's default agent.
 */
export class SpecPanel {
  readonly #panel = byId('spec-panel');
  readonly #summary = byId('spec-summary');
  readonly #fields = byId('spec-fields');

  reset(): void {
    delete this.#panel.dataset['seq'];
    this.#summary.textContent = "the deployment's default";
    this.#fields.replaceChildren(h('dt', {}, 'spec'), h('dd', {}, 'none in the log: the deployment’s default agent'));
  }

  show(event: SpecEvent): void {
    const { spec } = event;
    const llm = (spec['llm'] ?? {}) as { provider?: unknown; model?: unknown; profile?: unknown };
    const tools = Array.isArray(spec['tools']) ? (spec['tools'] as unknown[]).map(String) : [];
    const mcp = Array.isArray(spec['mcpServers'])
      ? (spec['mcpServers'] as { name?: unknown }[]).map((server) => String(server.name))
      : [];
    const confirmation = (spec['confirmation'] ?? {}) as { mode?: unknown };
    const model = `${String(llm.provider ?? '?')} ${String(llm.model ?? '?')}${llm.profile === undefined ? '' : ` (profile ${String(llm.profile)})`}`;
    this.#panel.dataset['seq'] = String(event.seq);
    this.#summary.textContent = `${String(llm.model ?? '?')}${event.template ? ` · ${event.template}` : ''}`;
    const field = (name: string, value: string): Node[] => [
      h('dt', {}, name),
      h('dd', { 'data-testid': `spec-${name}` }, value),
    ];
    this.#fields.replaceChildren(
      ...field('model', model),
      ...field('tools', [...tools, ...mcp.map((name) => `${name} (MCP)`)].join(', ') || 'none'),
      ...field('template', event.template ?? 'none'),
      ...field('confirmation', String(confirmation.mode ?? 'never')),
      ...field('set', `at #${event.seq}: ${event.reason}`),
    );
  }
}
