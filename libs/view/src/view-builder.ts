import type { ActionEvent, CondensationEvent, Event } from '@flotilla/events';
import { LogIndex } from './log-index.js';
import type { IndexState, ToolLoop } from './log-index.js';
import { viewBlocks, type ViewBlock } from './manipulation-indices.js';
import { Projection, projectSegment } from './projection.js';
import { isLlmEvent, type CondensationSummary, type View, type ViewItem } from './types.js';

/**
 * Keeps one conversation's view up to date as events are appended. Appending events without a
 * condensation costs O(new events) amortised: the view is settled up to the first batch that
 * still waits for results, and only the part after it is projected again. A condensation
 * re-projects the whole condensed list once.
 */
export class ViewBuilder {
  private index = new LogIndex();
  private projection = new Projection(this.index);
  /** View items (system prompt excluded) produced by raw[0..frontier), which can no longer change. */
  private settled: ViewItem[] = [];
  private settledOrigins: number[] = [];
  /** Raw positions of the items after the settled part, as of the last projection. */
  private tailOrigins: number[] = [];
  private readonly settledBatches = new Set<string>();
  private frontier = 0;
  private cached: View | undefined;

  /** Appends events in log order. Events whose id was already appended are ignored. */
  append(events: Iterable<Event>): this {
    for (const event of events) this.appendOne(event);
    return this;
  }

  /** The current view. Repeated calls without appends return the same object. */
  view(): View {
    if (this.cached !== undefined) return this.cached;
    const tail = this.settle();
    const system = this.index.systemPrompt;
    const items: ViewItem[] = system === undefined ? [...this.settled, ...tail] : [system, ...this.settled, ...tail];
    this.cached = { items, unhandledCondensationRequest: this.index.unhandledCondensationRequest };
    return this.cached;
  }

  /** Actions with understood input and no result yet (see `unmatchedActions`). */
  unmatchedActions(): ActionEvent[] {
    return this.index.unmatchedActions();
  }

  /**
   * The builder's state as plain JSON data: `ViewBuilder.resume` of it, given the events that
   * follow, builds the same views as this builder given them (see README.md, "Checkpoints").
   */
  checkpoint(): ViewCheckpoint {
    const items = [...this.projection.raw];
    return { ...this.index.state(items), items };
  }

  /** A builder that goes on from a checkpoint. Throws when the checkpoint does not hold together. */
  static resume(checkpoint: ViewCheckpoint): ViewBuilder {
    const builder = new ViewBuilder();
    builder.index = LogIndex.restore(checkpoint, checkpoint.items);
    builder.projection = new Projection(builder.index);
    for (const item of checkpoint.items) {
      builder.projection.raw.push(item);
      builder.projection.present.add(item.id);
    }
    return builder;
  }

  private appendOne(event: Event): void {
    if (!this.index.add(event)) return;
    this.cached = undefined;
    if (event.type === 'condensation') {
      this.applyCondensation(event);
      return;
    }
    if (event.type === 'branch') {
      // the copies of the rest of the branch's view follow as ordinary events
      this.forget(event.forgotten_event_ids);
      this.resetSettled();
      return;
    }
    if (!isLlmEvent(event) || event.type === 'system_prompt') return;
    // A new call joining a batch that is already settled changes that batch: project again.
    if (event.type === 'action' && this.settledBatches.has(event.response_id)) this.resetSettled();
    this.projection.raw.push(event);
    this.projection.present.add(event.id);
  }

  /** Forget the ids, then insert the summary where the condenser asked for it. */
  private applyCondensation(condensation: CondensationEvent): void {
    this.forget(condensation.forgotten_event_ids);
    const { projection } = this;
    this.resetSettled();
    if (condensation.summary === undefined) return;
    const position = this.summaryPosition(condensation.summary_offset ?? 0);
    const summary: CondensationSummary = {
      type: 'condensation_summary',
      id: condensation.id,
      summary: condensation.summary,
    };
    projection.raw.splice(position, 0, summary);
    projection.present.add(summary.id);
    this.resetSettled();
  }

  private forget(ids: readonly string[]): void {
    if (ids.length === 0) return;
    const forgotten = new Set(ids);
    const { projection } = this;
    const kept = projection.raw.filter((item) => !forgotten.has(item.id));
    projection.raw.length = 0;
    projection.raw.push(...kept);
    for (const id of forgotten) projection.present.delete(id);
    projection.clearCaches();
  }

  /**
   * `summary_offset` indexes the condensed view (system prompt included). It is snapped down to
   * the nearest position where a summary may stand — a block boundary that is not inside one
   * tool loop — and translated into a position of the raw list.
   */
  private summaryPosition(offset: number): number {
    const items = this.view().items;
    this.cached = undefined;
    const shift = this.index.systemPrompt === undefined ? 0 : 1;
    let snapped = shift;
    let previous: ViewBlock | undefined;
    for (const block of [...viewBlocks(items), undefined]) {
      const start = block?.start ?? items.length;
      if (start > offset) break;
      if (block === undefined || previous === undefined || !this.sameLoop(items, previous, block)) snapped = start;
      previous = block;
    }
    const origins = [...this.settledOrigins, ...this.tailOrigins];
    return origins[snapped - shift] ?? this.projection.raw.length;
  }

  private sameLoop(items: readonly ViewItem[], before: ViewBlock, after: ViewBlock): boolean {
    if (!before.tool || !after.tool) return false;
    const loopAt = (position: number): ToolLoop | undefined => {
      const item = items[position];
      return item?.type === 'action' ? this.index.batchOf(item).loop : undefined;
    };
    const loop = loopAt(before.start);
    return loop !== undefined && loop === loopAt(after.start);
  }

  private resetSettled(): void {
    this.settled = [];
    this.settledOrigins = [];
    this.settledBatches.clear();
    this.tailOrigins = [];
    this.frontier = 0;
    this.cached = undefined;
  }

  /** Projects raw[frontier..], moves what can no longer change into the settled part, returns the rest. */
  private settle(): ViewItem[] {
    const segment = projectSegment(this.projection, this.index, this.frontier, this.settledBatches);
    let count = 0;
    while (count < segment.items.length && (segment.origins[count] as number) < segment.firstPending) count += 1;
    for (let i = 0; i < count; i += 1) {
      this.settled.push(segment.items[i] as ViewItem);
      this.settledOrigins.push(segment.origins[i] as number);
    }
    for (const [key, origin] of segment.decided) if (origin < segment.firstPending) this.settledBatches.add(key);
    this.frontier = segment.firstPending;
    this.tailOrigins = segment.origins.slice(count);
    return segment.items.slice(count);
  }
}

/**
 * A ViewBuilder's state after a prefix of a log: the view's condensed list (every LLM event and
 * summary no condensation forgot, in order, system prompt apart) and what the index still needs
 * of the events before (IndexState). Plain JSON; it grows with the view, not with the history.
 */
export type ViewCheckpoint = IndexState & { readonly items: readonly ViewItem[] };

/** Builds the view of a whole log (see README.md for the rules). */
export function buildView(events: readonly Event[]): View {
  return new ViewBuilder().append(events).view();
}

/** Actions with input !== null that no observation, agent_error or user_rejection has answered. */
export function unmatchedActions(events: readonly Event[]): ActionEvent[] {
  const index = new LogIndex();
  for (const event of events) index.add(event);
  return index.unmatchedActions();
}
