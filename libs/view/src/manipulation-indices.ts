import { hasThinking, isResultEvent, type View, type ViewItem } from './types.js';

/** A stretch of a view that is only ever kept or forgotten whole. */
export type ViewBlock = {
  readonly start: number;
  /** Exclusive. */
  readonly end: number;
  /** A batch of tool calls with their results (as opposed to a message, summary or error). */
  readonly tool: boolean;
  readonly thinking: boolean;
};

function itemsOf(view: View | readonly ViewItem[]): readonly ViewItem[] {
  return 'items' in view ? view.items : view;
}

/** Where the conversation proper starts: 1 after a system prompt, else 0. */
export function firstCuttableIndex(view: View | readonly ViewItem[]): number {
  return itemsOf(view)[0]?.type === 'system_prompt' ? 1 : 0;
}

/**
 * Splits a view (after its system prompt) into blocks: each batch of parallel tool calls
 * together with the results that follow it is one block; every other item is a block alone.
 */
export function viewBlocks(view: View | readonly ViewItem[]): ViewBlock[] {
  const items = itemsOf(view);
  const blocks: ViewBlock[] = [];
  let position = firstCuttableIndex(items);
  while (position < items.length) {
    const item = items[position] as ViewItem;
    if (item.type !== 'action' && !isResultEvent(item)) {
      blocks.push({ start: position, end: position + 1, tool: false, thinking: false });
      position += 1;
      continue;
    }
    const start = position;
    let thinking = false;
    if (item.type === 'action') {
      while (position < items.length) {
        const next = items[position] as ViewItem;
        if (next.type !== 'action' || next.response_id !== item.response_id) break;
        thinking ||= hasThinking(next);
        position += 1;
      }
    }
    while (position < items.length && isResultEvent(items[position] as ViewItem)) position += 1;
    blocks.push({ start, end: position, tool: true, thinking });
  }
  return blocks;
}

/**
 * The sorted positions where a view may be cut — where a forgotten range may begin or end —
 * without splitting a tool call from its result, a parallel batch, or an atomic tool loop. A run
 * is a maximal sequence of tool blocks; from its first block that carries thinking blocks to its
 * end it is atomic, so no position strictly inside that stretch is offered. The position right
 * after the system prompt (0 without one) and the view's length are always included.
 */
export function manipulationIndices(view: View | readonly ViewItem[]): number[] {
  const items = itemsOf(view);
  const indices: number[] = [firstCuttableIndex(items)];
  let atomic = false;
  let previousTool = false;
  for (const block of viewBlocks(items)) {
    if (!block.tool || !previousTool) atomic = false;
    const inside = block.tool && previousTool && atomic;
    if (!inside && block.start !== indices[indices.length - 1]) indices.push(block.start);
    if (block.tool && block.thinking) atomic = true;
    previousTool = block.tool;
  }
  if (indices[indices.length - 1] !== items.length) indices.push(items.length);
  return indices;
}
