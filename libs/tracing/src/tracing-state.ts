/**
 * Whether this process traces. Off until startTracing installs an SDK: then every helper of this
 * lib returns at its first line, so a process that does not trace pays one boolean test per call
 * site and loads no SDK (see docs/operations.md, "Traces", for the measurement).
 */
let enabled = false;

export function tracingEnabled(): boolean {
  return enabled;
}

export function setTracingEnabled(value: boolean): void {
  enabled = value;
}
