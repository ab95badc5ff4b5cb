import type { ServerInfo } from '@flotilla/api';
import { describe, expect, it } from 'vitest';
import { relativeTime, renderServerInfo } from './format-resources.js';

describe('relativeTime', () => {
  const now = new Date('2026-11-29T21:00:00.000Z');
  const ago = (seconds: number) => relativeTime(new Date(now.getTime() - seconds * 1000), now);

  it('says how long ago, coarsely, and gives the date for old times', () => {
    expect(ago(2)).toBe('just now');
    expect(ago(42)).toBe('42s ago');
    expect(ago(3 * 60 + 5)).toBe('3m ago');
    expect(ago(5 * 3_600)).toBe('5h ago');
    expect(ago(3 * 86_400)).toBe('3d ago');
    expect(ago(90 * 86_400)).toBe('2026-08-31');
    expect(ago(-60)).toBe('2026-11-29 21:01:00');
  });
});

describe('renderServerInfo', () => {
  it('shows the version, tenant, capabilities, limits (0 = no limit) and tools', () => {
    const info: ServerInfo = {
      name: 'flotilla-gateway',
      version: '0.1.0',
      protocol_version: 1,
      api_version: 'v1',
      instance: 'gw-1',
      tenant: 'acme',
      tools: [{ name: 'terminal', description: 'Run commands.\nMore.' }],
      agents: {
        templates: [{ name: 'reviewer', model: 'gpt-big', tools: ['terminal', 'finish'] }],
        profiles: [
          { name: 'default', provider: 'openai-chat', model: 'gpt-small', fallbacks: [] },
          { name: 'big', provider: 'openai-chat', model: 'gpt-big', fallbacks: ['default', 'spare'] },
        ],
        custom_models: false,
        default: { model: 'gpt-small', tools: ['terminal', 'think', 'finish'] },
        mcp: { commands: ['node'], url_prefixes: ['https://mcp.example.com/'] },
        sub_agents: [
          {
            name: 'researcher',
            description: 'Reads code.',
            tools: ['terminal', 'finish'],
            workspace: 'shared',
            model: null,
          },
        ],
      },
      capabilities: {
        websocket: true,
        token_streaming: false,
        confirmation: true,
        condensation: false,
        event_search: true,
        secrets: true,
      },
      sandbox: { runners: 1, kinds: ['bwrap'], networks: ['none'], unsandboxed_runners: 0 },
      limits: {
        max_body_bytes: 1024,
        max_frame_bytes: 512,
        max_subscribers_per_conversation: 10,
        max_running: 0,
        max_running_per_tenant: 5,
        images: {
          max_image_bytes: 3_932_160,
          max_images_per_message: 8,
          max_message_image_bytes: 15_728_640,
          max_message_body_bytes: 22_020_096,
          media_types: ['image/png'],
        },
      },
    };
    expect(renderServerInfo(info)).toEqual([
      'flotilla-gateway 0.1.0 (api v1, protocol 1, instance gw-1)',
      'tenant:       acme',
      'capabilities: websocket, confirmation, event_search, secrets',
      'limits:       body 1024 B, frame 512 B, 10 subscribers per conversation, running: no limit (per tenant: 5)',
      'tools:',
      '  terminal  Run commands.',
      'agent:        gpt-small (default), tools terminal, think, finish',
      'models:       default (openai-chat gpt-small), big (openai-chat gpt-big, then default, then spare)',
      'mcp servers:  command node, URLs https://mcp.example.com/…',
      'templates:',
      '  reviewer  gpt-big, tools terminal, finish',
      'sub-agents:',
      "  researcher  Reads code. (the parent's model, tools terminal, finish, shared workspace)",
    ]);
  });
});
