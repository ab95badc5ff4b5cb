import type { Event, WorkspaceContextEvent } from '@flotilla/events';

/** A `SkillsFold` as data, for a view checkpoint. */
export type SkillsCheckpoint = {
  readonly context?: WorkspaceContextEvent;
  readonly activated: readonly string[];
  readonly applied_rules: readonly string[];
};

/**
 * What a conversation's log says of its workspace's skills: the workspace context read last
 * (`workspace_context`), the knowledge skills already activated (a message's `activated_skills`:
 * each once per conversation) and the path rules already shown (an observation's
 * `details.path_rules`: each once per conversation). Bounded by the context's own bounds.
 */
export class SkillsFold {
  #context: WorkspaceContextEvent | undefined;
  readonly #activated = new Set<string>();
  readonly #appliedRules = new Set<string>();

  static resume(checkpoint: SkillsCheckpoint | undefined): SkillsFold {
    const fold = new SkillsFold();
    if (!checkpoint) return fold;
    fold.#context = checkpoint.context;
    for (const name of checkpoint.activated) fold.#activated.add(name);
    for (const path of checkpoint.applied_rules) fold.#appliedRules.add(path);
    return fold;
  }

  static of(events: readonly Event[]): SkillsFold {
    return new SkillsFold().append(events);
  }

  append(events: readonly Event[]): this {
    for (const event of events) {
      if (event.type === 'workspace_context') this.#context = event;
      else if (event.type === 'message') for (const name of event.activated_skills ?? []) this.#activated.add(name);
      else if (event.type === 'observation')
        for (const path of appliedRulesOf(event.details)) this.#appliedRules.add(path);
    }
    return this;
  }

  /** The workspace context in force (the last read), if the log has one. */
  get context(): WorkspaceContextEvent | undefined {
    return this.#context;
  }

  get activated(): ReadonlySet<string> {
    return this.#activated;
  }

  get appliedRules(): ReadonlySet<string> {
    return this.#appliedRules;
  }

  checkpoint(): SkillsCheckpoint {
    return {
      ...(this.#context ? { context: this.#context } : {}),
      activated: [...this.#activated],
      applied_rules: [...this.#appliedRules],
    };
  }
}

/** The rules (their AGENTS.md paths) an observation's details say it showed. */
export function appliedRulesOf(details: Readonly<Record<string, unknown>> | undefined): string[] {
  const rules = details?.['path_rules'];
  return Array.isArray(rules) ? rules.filter((rule): rule is string => typeof rule === 'string') : [];
}
