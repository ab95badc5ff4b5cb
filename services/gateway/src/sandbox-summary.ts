import type { ServerInfo } from '@flotilla/api';
import type { RunnerRegistry } from '@flotilla/runtime';
import type { Logger } from 'pino';

type Summary = ServerInfo['sandbox'];

const REFRESH_MS = 5_000;

/**
 * How the live tool runners sandbox the agent, from their heartbeats, for `/v1/server-info`:
 * kinds, network modes, and a warning when any runs the agent unsandboxed.
 */
export class SandboxSummary {
  #current: Summary = { runners: 0, kinds: [], networks: [], unsandboxed_runners: 0 };
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly runners: RunnerRegistry | undefined,
    private readonly logger: Logger,
  ) {
    if (runners) {
      this.#timer = setInterval(() => void this.refresh(), REFRESH_MS);
      this.#timer.unref();
    }
  }

  get current(): Summary {
    return this.#current;
  }

  async refresh(): Promise<void> {
    if (!this.runners) return;
    try {
      const live = await this.runners.list();
      const described = live.map((runner) => runner.sandbox ?? {});
      const unsandboxed = described.filter((sandbox) => sandbox['isolated'] !== true).length;
      const distinct = (field: string): string[] =>
        [
          ...new Set(
            described.map((sandbox) => sandbox[field]).filter((value): value is string => typeof value === 'string'),
          ),
        ].sort();
      this.#current = {
        runners: live.length,
        kinds: distinct('kind'),
        networks: distinct('network'),
        unsandboxed_runners: unsandboxed,
        ...(unsandboxed > 0
          ? {
              warning: `${unsandboxed} tool runner(s) run the agent's commands unsandboxed (FLOTILLA_SANDBOX=none), with the service's own privileges`,
            }
          : {}),
      };
    } catch (error) {
      this.logger.warn({ err: error }, 'could not read the tool runners for server info');
    }
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
