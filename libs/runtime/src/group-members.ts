import { memberSubject } from '@flotilla/bus';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';

/** What an instance announces on its group's member subject. */
const Announcement = z.strictObject({
  v: z.literal(1),
  instance: z.string().min(1).max(256),
  /** `hello`: just started, siblings answer at once; `alive`: the periodic heartbeat; `leaving`: stopping. */
  state: z.enum(['hello', 'alive', 'leaving']),
});
type Announcement = z.infer<typeof Announcement>;

export type GroupMembersOptions = {
  readonly nc: NatsConnection;
  readonly group: string;
  readonly instanceId: string;
  /** How often each instance says it is alive (default 1 s); one not heard for 3.5 periods is gone. */
  readonly heartbeatMs?: number;
  /** Told the live members (this instance among them, sorted) whenever they change. */
  readonly onChange: (members: readonly string[]) => void;
  /** An announcement that is not one (logged by the caller; it changes nothing). */
  readonly onInvalid?: (reason: string) => void;
  /** The subscription failed (e.g. the credential lacks the subject): this instance then ranks itself alone. */
  readonly onError?: (error: Error) => void;
};

/**
 * The live instances of a partitioned group, as they announce themselves on core NATS
 * (memberSubject): a hello at start, which the others answer at once, a heartbeat every period,
 * and a goodbye on a graceful stop. Each instance ranks itself on the partitions among them
 * (libs/bus partitionPriorities). Nothing depends on every instance agreeing at every moment: two
 * that briefly see different members may tie on a partition, which the server then shares.
 */
export class GroupMembers {
  readonly #options: GroupMembersOptions;
  readonly #heartbeatMs: number;
  /** Each other member, and when it was last heard from. */
  readonly #seen = new Map<string, number>();
  #members: readonly string[];
  #subscription: Subscription | undefined;
  #timer: NodeJS.Timeout | undefined;

  private constructor(options: GroupMembersOptions) {
    this.#options = options;
    this.#heartbeatMs = options.heartbeatMs ?? 1_000;
    this.#members = [options.instanceId];
  }

  /**
   * Joins the group: says hello, and resolves with the members heard within `settleMs` (the
   * siblings' answers come within a round trip), so the first pulls already rank among them.
   */
  static async join(options: GroupMembersOptions, settleMs = 250): Promise<GroupMembers> {
    const members = new GroupMembers(options);
    members.#subscription = options.nc.subscribe(memberSubject(options.group), {
      callback: (error, message) => {
        if (error) options.onError?.(error);
        else members.#heard(message.data);
      },
    });
    members.#announce('hello');
    members.#timer = setInterval(() => {
      members.#announce('alive');
      members.#expire();
    }, members.#heartbeatMs);
    members.#timer.unref();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    return members;
  }

  /** The live members, this instance among them, sorted. */
  get members(): readonly string[] {
    return this.#members;
  }

  /** Says goodbye (its siblings take its partitions at once) and stops listening. */
  leave(): void {
    clearInterval(this.#timer);
    this.#announce('leaving');
    this.#subscription?.unsubscribe();
  }

  #announce(state: Announcement['state']): void {
    const { nc, group, instanceId } = this.#options;
    if (nc.isClosed()) return;
    nc.publish(memberSubject(group), JSON.stringify({ v: 1, instance: instanceId, state }));
  }

  #heard(data: Uint8Array): void {
    let parsed: z.ZodSafeParseResult<Announcement>;
    try {
      parsed = Announcement.safeParse(JSON.parse(new TextDecoder().decode(data)));
    } catch {
      this.#options.onInvalid?.('not JSON');
      return;
    }
    if (!parsed.success) {
      this.#options.onInvalid?.(z.prettifyError(parsed.error));
      return;
    }
    const { instance, state } = parsed.data;
    if (instance === this.#options.instanceId) return;
    if (state === 'leaving') this.#seen.delete(instance);
    else {
      // a newcomer learns of this instance at once rather than a heartbeat later
      if (state === 'hello' || !this.#seen.has(instance)) this.#announce('alive');
      this.#seen.set(instance, Date.now());
    }
    this.#update();
  }

  #expire(): void {
    const oldest = Date.now() - 3.5 * this.#heartbeatMs;
    for (const [instance, at] of this.#seen) if (at < oldest) this.#seen.delete(instance);
    this.#update();
  }

  #update(): void {
    const members = [this.#options.instanceId, ...this.#seen.keys()].sort();
    if (members.length === this.#members.length && members.every((member, index) => member === this.#members[index]))
      return;
    this.#members = members;
    this.#options.onChange(members);
  }
}
