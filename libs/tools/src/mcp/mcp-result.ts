import type { ToolContent, ToolResult } from '../core/result.js';

type McpContentBlock = { readonly type: string; readonly [key: string]: unknown };

function convert(block: McpContentBlock): ToolContent {
  if (block.type === 'text' && typeof block['text'] === 'string') return { type: 'text', text: block['text'] };
  if (block.type === 'image' && typeof block['data'] === 'string') {
    return {
      type: 'image',
      data: block['data'],
      mediaType: typeof block['mimeType'] === 'string' ? block['mimeType'] : 'image/png',
    };
  }
  if (block.type === 'resource' && typeof block['resource'] === 'object' && block['resource'] !== null) {
    const resource = block['resource'] as Record<string, unknown>;
    if (typeof resource['text'] === 'string')
      return { type: 'text', text: `[resource ${String(resource['uri'])}]\n${resource['text']}` };
    return {
      type: 'text',
      text: `[binary resource ${String(resource['uri'])} (${String(resource['mimeType'] ?? 'unknown type')}) not shown]`,
    };
  }
  if (block.type === 'resource_link')
    return {
      type: 'text',
      text: `[resource link ${String(block['uri'])}${block['name'] ? ` (${String(block['name'])})` : ''}]`,
    };
  if (block.type === 'audio')
    return { type: 'text', text: `[audio content (${String(block['mimeType'] ?? 'unknown type')}) not shown]` };
  return { type: 'text', text: JSON.stringify(block) };
}

/** Turn an MCP `tools/call` result into a ToolResult. */
export function fromMcpResult(result: Record<string, unknown>): ToolResult {
  const blocks = Array.isArray(result['content']) ? (result['content'] as McpContentBlock[]) : [];
  const content = blocks.map(convert);
  if (content.length === 0 && result['structuredContent'] !== undefined) {
    content.push({ type: 'text', text: JSON.stringify(result['structuredContent'], null, 2) });
  }
  if (content.length === 0 && result['toolResult'] !== undefined)
    content.push({ type: 'text', text: JSON.stringify(result['toolResult']) });
  if (content.length === 0) content.push({ type: 'text', text: '(the tool returned no content)' });
  return { content, isError: result['isError'] === true };
}
