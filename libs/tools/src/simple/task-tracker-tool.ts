import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ToolResult } from '../core/result.js';
import { errorResult, textResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';

export const TaskStatus = { Todo: 'todo', InProgress: 'in_progress', Done: 'done' } as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export const Task = z.object({
  title: z.string().min(1).describe('A short description of the task.'),
  status: z.enum([TaskStatus.Todo, TaskStatus.InProgress, TaskStatus.Done]).describe('todo, in_progress or done.'),
  notes: z.string().optional().describe('Details, findings or blockers.'),
});
export type Task = z.infer<typeof Task>;

export const TaskTrackerParameters = z.object({
  command: z.enum(['view', 'plan']).describe('`view` shows the task list; `plan` replaces it with task_list.'),
  task_list: z.array(Task).optional().describe('Required for `plan`: the complete, updated list of tasks.'),
});
export type TaskTrackerParameters = z.infer<typeof TaskTrackerParameters>;

export const TASKS_FILE_NAME = 'tasks.json';

const MARK: Readonly<Record<TaskStatus, string>> = { todo: '[ ]', in_progress: '[~]', done: '[x]' };

function render(tasks: readonly Task[]): string {
  if (tasks.length === 0) return 'The task list is empty. Use command "plan" to create one.';
  const done = tasks.filter((task) => task.status === 'done').length;
  const lines = tasks.map(
    (task, index) => `${index + 1}. ${MARK[task.status]} ${task.title}${task.notes ? `\n   ${task.notes}` : ''}`,
  );
  return `Tasks (${done}/${tasks.length} done):\n${lines.join('\n')}`;
}

async function load(file: string): Promise<Task[] | Error> {
  try {
    return z.array(Task).parse(JSON.parse(await readFile(file, 'utf8')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    return new Error(`The stored task list ${file} is unreadable; plan a new one.`);
  }
}

/** A task list kept in `<conversationDir>/tasks.json`. */
export function createTaskTrackerTool(): ToolDefinition<TaskTrackerParameters> {
  return defineTool({
    name: 'task_tracker',
    description:
      'Keep a task list for multi-step work: `plan` replaces the whole list (each task has a title, a status todo/in_progress/done and optional notes); `view` shows it. Update it as you progress.',
    parameters: TaskTrackerParameters,
    annotations: { readOnly: false, destructive: false, idempotent: true, openWorld: false },
    resources: (_params, context) => [`tasks:${context.conversationId}`],
    async execute(params, context): Promise<ToolResult> {
      const file = path.join(context.conversationDir, TASKS_FILE_NAME);
      if (params.command === 'view') {
        const tasks = await load(file);
        return tasks instanceof Error ? errorResult(tasks.message) : textResult(render(tasks), { tasks });
      }
      if (params.task_list === undefined) return errorResult('Parameter `task_list` is required for command "plan".');
      await mkdir(context.conversationDir, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, JSON.stringify(params.task_list, null, 2), 'utf8');
      await rename(temporary, file);
      return textResult(`Task list updated.\n${render(params.task_list)}`, { tasks: params.task_list });
    },
  });
}
