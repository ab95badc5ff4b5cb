import type { ActionEvent } from '@flotilla/events';
import type { Batch, LogIndex, ToolLoop } from './log-index.js';
import { isResultEvent, type ResultEvent, type ViewItem } from './types.js';

/** Why a batch is or is not in the view. `pending` may still become `kept`; `dropped` never does. */
export type BatchStatus =
  | { readonly kind: 'kept'; readonly actions: readonly ActionEvent[]; readonly results: readonly ResultEvent[] }
  | { readonly kind: 'pending' }
  | { readonly kind: 'dropped' };

const PENDING: BatchStatus = { kind: 'pending' };
const DROPPED: BatchStatus = { kind: 'dropped' };

/**
 * The condensed event list (every LLM event not forgotten, plus summaries, in log order; the
 * system prompt is kept apart) and the membership set used to decide what the view keeps.
 */
export class Projection {
  readonly raw: ViewItem[] = [];
  readonly present = new Set<string>();
  private readonly loopCut = new Map<ToolLoop, boolean>();

  constructor(private readonly index: LogIndex) {}

  /** Called after forgetting: cached tool-loop verdicts may change. */
  clearCaches(): void {
    this.loopCut.clear();
  }

  /** The first result of each action in the view, in call order, or why the batch is left out. */
  batchStatus(batch: Batch): BatchStatus {
    const actions: ActionEvent[] = [];
    const results: ResultEvent[] = [];
    let pending = false;
    for (const actionId of batch.actionIds) {
      const action = this.index.actions.get(actionId);
      if (action === undefined || !this.present.has(actionId)) return DROPPED;
      const all = this.index.resultsByAction.get(actionId);
      if (all === undefined) {
        pending = true;
        continue;
      }
      const first = all.find((result) => this.present.has(result.id));
      if (first === undefined) return DROPPED;
      actions.push(action);
      results.push(first);
    }
    if (batch.loop !== undefined && this.isLoopCut(batch.loop)) return DROPPED;
    return pending ? PENDING : { kind: 'kept', actions, results };
  }

  /** A loop is cut when a condensation forgot any of its actions or the answer to one of them. */
  private isLoopCut(loop: ToolLoop): boolean {
    const cached = this.loopCut.get(loop);
    if (cached !== undefined) return cached;
    const cut = loop.batchKeys.some((key) =>
      (this.index.batches.get(key)?.actionIds ?? []).some((actionId) => {
        if (!this.present.has(actionId)) return true;
        const all = this.index.resultsByAction.get(actionId);
        return all !== undefined && !all.some((result) => this.present.has(result.id));
      }),
    );
    this.loopCut.set(loop, cut);
    return cut;
  }
}

/** The view items produced from `raw[from..]`, each with the raw position that produced it. */
export type Segment = {
  readonly items: ViewItem[];
  readonly origins: number[];
  /** Raw position of the first batch still waiting for results, or raw.length. */
  readonly firstPending: number;
  /** Batches decided (kept or dropped) in this segment, with the raw position of their first action. */
  readonly decided: Map<string, number>;
};

/**
 * Orders `raw[from..]` into view items: every kept batch is emitted at its first action as its
 * actions followed by one result per action in call order; results are only ever emitted with
 * their batch (so orphans and duplicates vanish); anything that arrived while the batch ran
 * (a user message typed during execution) follows the batch's results.
 */
export function projectSegment(
  projection: Projection,
  index: LogIndex,
  from: number,
  settledBatches: ReadonlySet<string>,
): Segment {
  const items: ViewItem[] = [];
  const origins: number[] = [];
  const decided = new Map<string, number>();
  const seenBatches = new Set<string>();
  const raw = projection.raw;
  let firstPending = raw.length;
  for (let position = from; position < raw.length; position += 1) {
    const item = raw[position] as ViewItem;
    if (item.type === 'action') {
      const key = item.response_id;
      if (settledBatches.has(key) || seenBatches.has(key)) continue;
      seenBatches.add(key);
      const status = projection.batchStatus(index.batchOf(item));
      if (status.kind === 'pending') {
        if (firstPending === raw.length) firstPending = position;
        continue;
      }
      decided.set(key, position);
      if (status.kind === 'kept') {
        for (const entry of [...status.actions, ...status.results]) {
          items.push(entry);
          origins.push(position);
        }
      }
      continue;
    }
    if (isResultEvent(item)) continue;
    items.push(item);
    origins.push(position);
  }
  return { items, origins, firstPending, decided };
}
