/** What a tool returns: content for the model plus machine-readable details. */
export type TextContent = { readonly type: 'text'; readonly text: string };
export type ImageContent = { readonly type: 'image'; readonly data: string; readonly mediaType: string };
export type ToolContent = TextContent | ImageContent;

export type ToolResult = {
  readonly content: readonly ToolContent[];
  readonly isError: boolean;
  readonly details?: Readonly<Record<string, unknown>>;
};

export function textResult(text: string, details?: Record<string, unknown>): ToolResult {
  return details === undefined
    ? { content: [{ type: 'text', text }], isError: false }
    : { content: [{ type: 'text', text }], isError: false, details };
}

export function errorResult(text: string, details?: Record<string, unknown>): ToolResult {
  return details === undefined
    ? { content: [{ type: 'text', text }], isError: true }
    : { content: [{ type: 'text', text }], isError: true, details };
}

/** All text parts of a result joined by newlines (images are skipped). */
export function resultText(result: ToolResult): string {
  return result.content
    .filter((part): part is TextContent => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}
