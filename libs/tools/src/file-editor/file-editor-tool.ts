import path from 'node:path';
import { z } from 'zod';
import { describeError, isToolError } from '../core/errors.js';
import type { ToolResult } from '../core/result.js';
import { errorResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { EditHistory } from './edit-history.js';
import { createFile, insertText, MAX_VIEW_CHARS, replaceText, undoEdit, viewPath } from './file-editor-commands.js';
import { MAX_EDITABLE_BYTES } from './text-file.js';

export const FileEditorParameters = z.object({
  command: z.enum(['view', 'create', 'str_replace', 'insert', 'undo_edit']).describe('The operation to perform.'),
  path: z.string().min(1).describe('Absolute path inside the workspace (or relative to the workspace root).'),
  file_text: z.string().optional().describe('Required for `create`: the content of the new file.'),
  old_str: z
    .string()
    .optional()
    .describe('Required for `str_replace`: the exact text to replace; it must occur exactly once.'),
  new_str: z
    .string()
    .optional()
    .describe('For `str_replace`: the replacement (empty to delete). Required for `insert`: the text to insert.'),
  insert_line: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Required for `insert`: new_str is inserted after this line (0 = start of file).'),
  view_range: z
    .array(z.number().int())
    .length(2)
    .optional()
    .describe(
      'For `view` of a file: [start_line, end_line], 1-based and inclusive; end_line -1 means the end of the file.',
    ),
});
export type FileEditorParameters = z.infer<typeof FileEditorParameters>;

const DESCRIPTION = `View, create and edit UTF-8 text files in the workspace.
* view: a file with line numbers (optionally a view_range), or a directory listing 2 levels deep.
* create: a new file (never overwrites). str_replace: replace old_str, which must match exactly once (whitespace included).
* insert: insert new_str after line insert_line. undo_edit: revert the last edit to a file.
Long views are clipped at ${MAX_VIEW_CHARS} characters; use view_range. A file over ${MAX_EDITABLE_BYTES / 1024 / 1024} MiB cannot be edited, and is viewed in parts (its first lines, or a view_range).`;

function missing(field: string, command: string): ToolResult {
  return errorResult(`Parameter \`${field}\` is required for command "${command}".`);
}

export function createFileEditorTool(): ToolDefinition<FileEditorParameters> {
  const history = new EditHistory();
  return defineTool({
    name: 'file_editor',
    description: DESCRIPTION,
    parameters: FileEditorParameters,
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: false },
    resources: (params, context) => [`file:${path.resolve(context.workspace.root, params.path)}`],
    async execute(params, context) {
      let filePath: string;
      try {
        // saved outputs (the service's read-only area) can be viewed, never changed
        filePath =
          params.command === 'view'
            ? await context.workspace.resolveForReading(params.path)
            : await context.workspace.resolvePath(params.path);
      } catch (error) {
        if (isToolError(error)) return errorResult(error.message, { error_code: error.code });
        throw error;
      }
      const target = { filePath, conversationId: context.conversationId, history, files: context.workspace };
      try {
        switch (params.command) {
          case 'view':
            return await viewPath(filePath, params.view_range, context.workspace);
          case 'create':
            return params.file_text === undefined
              ? missing('file_text', 'create')
              : await createFile(target, params.file_text);
          case 'str_replace':
            return params.old_str === undefined
              ? missing('old_str', 'str_replace')
              : await replaceText(target, params.old_str, params.new_str ?? '');
          case 'insert':
            if (params.insert_line === undefined) return missing('insert_line', 'insert');
            return params.new_str === undefined
              ? missing('new_str', 'insert')
              : await insertText(target, params.insert_line, params.new_str);
          case 'undo_edit':
            return await undoEdit(target);
        }
      } catch (error) {
        return errorResult(`file_editor ${params.command} failed on ${filePath}: ${describeError(error)}`);
      }
    },
  });
}
