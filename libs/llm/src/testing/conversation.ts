import type { ChatMessage, ToolSchema } from '../messages.js';

/** The conversation the recorded tool-calling fixtures answer. */
export const readFileTool: ToolSchema = {
  name: 'read_file',
  description: 'Read a file from the workspace',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

export const firstTurn: readonly ChatMessage[] = [
  {
    role: 'system',
    content: [
      { text: 'You are a careful software engineer.', cache: true },
      { text: 'Today is 2025-07-03. Repository: flotilla.', cache: false },
    ],
  },
  { role: 'user', content: [{ type: 'text', text: 'Compare package.json and tsconfig.json.' }] },
];
