/**
 * Commits a process holds until it has a free slot, served fairly across tenants instead of in
 * delivery order (docs/architecture.md, "Tenant fairness").
 *
 * Each tenant's commits wait in a FIFO of their own (so a conversation's commits keep their
 * order). A free slot goes to the waiting tenant with the fewest commits in flight, the one served
 * least recently among equals: max-min fairness, so a tenant with a handful of steps is served
 * before a flood's next one.
 *
 * That alone still makes a small tenant wait for the flood's next step to end whenever its own
 * commit arrives (the flood fills every slot the moment one frees). So while more than one tenant
 * is active, a tenant at or above its share (capacity / active tenants) may take a slot only
 * while more are free than are kept for the others: `reserve` slots, and for each tenant under
 * its share, the slots it used lately and has given back (up to its share: its steps come back
 * after their tools run, often all at once). A tenant alone may use every slot.
 */
export class TenantQueue<T> {
  readonly #tenants = new Map<string, TenantState<T>>();
  readonly #options: TenantQueueOptions;
  #held = 0;
  #served = 0;

  constructor(options: TenantQueueOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError(`capacity must be a whole number ≥ 1, not ${options.capacity}`);
    if (!Number.isInteger(options.reserve) || options.reserve < 0 || options.reserve >= options.capacity)
      throw new RangeError(
        `reserve must be a whole number below the capacity (${options.capacity}), not ${options.reserve}`,
      );
    this.#options = options;
  }

  /** Commits waiting for a slot. */
  get held(): number {
    return this.#held;
  }

  push(tenant: string, item: T): void {
    const state = this.#state(tenant);
    state.waiting.push(item);
    state.lastActive = this.#now();
    this.#held += 1;
  }

  /**
   * The next commit to take a slot, with `free` slots free now (its tenant counted in flight until
   * `finished`), or undefined when none may: nothing waits, or only tenants at or above their
   * share wait and no more than the reserve is free.
   */
  next(free: number): { readonly tenant: string; readonly item: T; readonly withinShare: boolean } | undefined {
    if (free < 1 || this.#held === 0) return undefined;
    const now = this.#now();
    let best: [string, TenantState<T>] | undefined;
    const active: TenantState<T>[] = [];
    for (const [tenant, state] of this.#tenants) {
      const waiting = state.waiting.length > 0;
      if (waiting || state.inFlight > 0 || now - state.lastActive < this.#options.activeForMs) active.push(state);
      else {
        this.#tenants.delete(tenant); // idle long enough to be forgotten
        continue;
      }
      if (!waiting) continue;
      if (
        !best ||
        state.inFlight < best[1].inFlight ||
        (state.inFlight === best[1].inFlight && state.lastServed < best[1].lastServed)
      )
        best = [tenant, state];
    }
    if (!best) return undefined;
    const [tenant, state] = best;
    const share = this.#options.capacity / active.length;
    const withinShare = state.inFlight < share;
    if (active.length > 1 && !withinShare) {
      // kept for the others: the reserve, and what each under its share used lately and gave back
      let kept = this.#options.reserve;
      for (const other of active) {
        if (other !== state && other.inFlight < share)
          kept += Math.max(0, Math.min(share, this.#peak(other, now)) - other.inFlight);
      }
      if (free <= kept) return undefined;
    }
    const item = state.waiting.shift()!;
    this.#held -= 1;
    state.inFlight += 1;
    if (state.inFlight >= this.#peak(state, now)) {
      state.peak = state.inFlight;
      state.peakAt = now;
    }
    state.lastServed = ++this.#served;
    state.lastActive = now;
    return { tenant, item, withinShare };
  }

  /** A commit `next` gave out is done: its slot is free again. */
  finished(tenant: string): void {
    const state = this.#tenants.get(tenant);
    if (!state || state.inFlight === 0) throw new Error(`tenant "${tenant}" has nothing in flight`);
    state.inFlight -= 1;
    state.lastActive = this.#now();
  }

  /** Takes every waiting commit out (at shutdown: each goes back to the group). */
  drain(): T[] {
    const all: T[] = [];
    for (const state of this.#tenants.values()) all.push(...state.waiting.drain());
    this.#held = 0;
    return all;
  }

  #state(tenant: string): TenantState<T> {
    let state = this.#tenants.get(tenant);
    if (!state) {
      state = { waiting: new Fifo<T>(), inFlight: 0, lastServed: 0, lastActive: 0, peak: 0, peakAt: 0 };
      this.#tenants.set(tenant, state);
    }
    return state;
  }

  /** The most a tenant had in flight lately (within activeForMs of reaching it), or what it has now. */
  #peak(state: TenantState<T>, now: number): number {
    return now - state.peakAt < this.#options.activeForMs ? Math.max(state.peak, state.inFlight) : state.inFlight;
  }

  #now(): number {
    return this.#options.now ? this.#options.now() : performance.now();
  }
}

export type TenantQueueOptions = {
  /** The process's slots (its concurrency). */
  readonly capacity: number;
  /** Free slots kept for tenants under their share while more than one tenant is active. */
  readonly reserve: number;
  /** How long a tenant counts as active after its last commit arrived or finished (a conversation's step is owed again after its tools ran). */
  readonly activeForMs: number;
  /** The clock (ms); default performance.now. */
  readonly now?: () => number;
};

type TenantState<T> = {
  readonly waiting: Fifo<T>;
  inFlight: number;
  lastServed: number;
  lastActive: number;
  /** The most it had in flight lately, and when it last reached it. */
  peak: number;
  peakAt: number;
};

/** A FIFO whose shift does not move what is left (a flood holds thousands). */
class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    // compact once the consumed part is most of the array
    if (this.#head > 1_024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  drain(): T[] {
    const rest = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return rest;
  }
}
