/**
 * Services off a step's critical path: the projector (the snapshot may trail the log), the
 * condenser (woken only for a condensation or a title, each of which waits on the model more than
 * on CPU), the PostgreSQL sink and the webhooks service. Where
 * several services share one machine's cores (the launcher; the test system and the benchmarks,
 * which measure what it runs), these run at a lower priority, so that when the cores are busy the
 * step workers, tool runners, gateway and delegator get them first: on 2 cores the unloaded step
 * cycle measured 4–22 % shorter in paired rounds (docs/benchmarks.md, peers). They lose nothing while a core is free,
 * and get ~10 % of a contended core (CFS weights) rather than none. On Kubernetes each service is
 * a pod with its own CPU requests, and this does not apply.
 */
const BACKGROUND_SERVICES: ReadonlySet<string> = new Set(['projector', 'condenser', 'pg-sink', 'webhooks']);

/** The niceness background services run at (nice(1) 10: a tenth of the CPU weight of nice 0). */
export const BACKGROUND_NICENESS = 10;

/** The niceness the supervisor gives a service's process (see BACKGROUND_SERVICES). */
export function serviceNiceness(service: string): number {
  return BACKGROUND_SERVICES.has(service) ? BACKGROUND_NICENESS : 0;
}

/** The services that run as background (this library's tests read it). */
export function backgroundServices(): readonly string[] {
  return [...BACKGROUND_SERVICES];
}
