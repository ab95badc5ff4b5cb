import { posix } from 'node:path';
import type { EventDraft, SecurityRisk } from '@flotilla/events';
import { parsePatch } from '@flotilla/tools';
import { z } from 'zod';
import { commandWrites, shellPipelines } from './shell-commands.js';
import { DEFAULT_COMMAND_RULES, DEFAULT_PATH_RULES, type CommandRuleScope, type RuleRisk } from './security-rules.js';
import type { ToolCatalog } from './tool-catalog.js';

/**
 * The security analyzers: what rates the risk of each action the step decides, before the
 * confirmation policy reads it. `model` is the model's own `security_risk` on each call; `rules`
 * reads the calls of the built-in tools (the terminal's command, the paths file_editor and
 * apply_patch write) against configured patterns. A safety net that names what it saw, not a
 * boundary: the sandbox bounds what a command can do (DESIGN.md invariant 11).
 */
export const SecurityAnalyzerName = z.enum(['model', 'rules']);
export type SecurityAnalyzerName = z.infer<typeof SecurityAnalyzerName>;

const RuleRiskSchema = z.enum(['low', 'medium', 'high']);

function checkPattern(rule: { name: string; pattern: string }, context: z.RefinementCtx): void {
  try {
    new RegExp(rule.pattern, 'u');
  } catch (error) {
    context.addIssue({
      code: 'custom',
      path: ['pattern'],
      message: `rule "${rule.name}": ${(error as Error).message}`,
    });
  }
}

export const CommandRule = z
  .strictObject({
    /** Shown to the user when the rule asks for confirmation (`terminal command matches "<name>" (high)`). */
    name: z.string().min(1).max(120),
    risk: RuleRiskSchema,
    /** A regular expression (JavaScript, `u` flag), tested against each command as the analyzer reads it. */
    pattern: z.string().min(1),
    /** `command` (each simple command, default), `pipeline` (its commands joined by ` | `) or `text` (as written, whitespace collapsed). */
    scope: z.enum(['command', 'pipeline', 'text']).default('command'),
  })
  .superRefine(checkPattern);
export type CommandRule = z.infer<typeof CommandRule>;

export const PathRule = z
  .strictObject({
    name: z.string().min(1).max(120),
    risk: RuleRiskSchema,
    /** A regular expression tested against each path a call writes, made absolute against /workspace. */
    pattern: z.string().min(1),
  })
  .superRefine(checkPattern);
export type PathRule = z.infer<typeof PathRule>;

const DEFAULT_NAMES: ReadonlySet<string> = new Set(
  [...DEFAULT_COMMAND_RULES, ...DEFAULT_PATH_RULES].map((rule) => rule.name),
);

export const SecurityRules = z
  .strictObject({
    /** Apply the default rules (docs/security.md lists them). */
    defaults: z.boolean().default(true),
    /** Names of default rules not to apply. */
    disable: z.array(z.string().min(1)).default([]),
    /** Rules of your own, applied with the defaults. */
    commands: z.array(CommandRule).default([]),
    paths: z.array(PathRule).default([]),
    /** A risk by tool name, for tools the rules cannot read (MCP tools…): every call of that tool is rated at least this. */
    tools: z.record(z.string().min(1), RuleRiskSchema).default({}),
  })
  .superRefine((rules, context) => {
    rules.disable.forEach((name, index) => {
      if (!DEFAULT_NAMES.has(name))
        context.addIssue({
          code: 'custom',
          path: ['disable', index],
          message: `"${name}" is not a default rule (they are: ${[...DEFAULT_NAMES].map((known) => `"${known}"`).join(', ')})`,
        });
    });
    const seen = new Set(rules.defaults ? [...DEFAULT_NAMES].filter((name) => !rules.disable.includes(name)) : []);
    for (const [kind, list] of [
      ['commands', rules.commands],
      ['paths', rules.paths],
    ] as const) {
      list.forEach((rule, index) => {
        if (seen.has(rule.name))
          context.addIssue({
            code: 'custom',
            path: [kind, index, 'name'],
            message: `rule "${rule.name}": another rule has this name (disable the default one to replace it)`,
          });
        seen.add(rule.name);
      });
    }
  });
export type SecurityRules = z.infer<typeof SecurityRules>;

export const SecurityConfig = z.strictObject({
  /** Whose ratings count; an action's risk is the highest of theirs. */
  analyzers: z
    .array(SecurityAnalyzerName)
    .min(1)
    .default(['model', 'rules'])
    .refine((names) => new Set(names).size === names.length, 'each analyzer once'),
  rules: SecurityRules.prefault({}),
});
export type SecurityConfig = z.infer<typeof SecurityConfig>;

/** A rule that matched a call: what it matched (`terminal command`, `file_editor path "/etc/x"`) and its risk. */
export type SecurityFinding = { readonly rule: string; readonly risk: RuleRisk; readonly subject: string };

/** One action's rating: the risk it is given, the model's own, and what the rules found. */
export type SecurityAssessment = {
  readonly risk: SecurityRisk;
  readonly model: SecurityRisk | undefined;
  readonly findings: readonly SecurityFinding[];
};

/** How the confirmation policy ranks a risk: unknown counts as high. */
export const RISK_RANK: Readonly<Record<SecurityRisk, number>> = { unknown: 3, low: 1, medium: 2, high: 3 };
const KNOWN_RANK: Readonly<Record<SecurityRisk, number>> = { unknown: 0, low: 1, medium: 2, high: 3 };

/**
 * The highest of two ratings, as the confirmation policy ranks them (unknown as high), so an
 * analyzer can only raise an action's risk, never lower it: the model's `unknown` stays unknown
 * (and asks, under `risky`) when the rules find nothing, and a rule's `high` is kept over it.
 */
export function highestRisk(first: SecurityRisk, second: SecurityRisk): SecurityRisk {
  if (RISK_RANK[first] !== RISK_RANK[second]) return RISK_RANK[first] > RISK_RANK[second] ? first : second;
  return KNOWN_RANK[first] >= KNOWN_RANK[second] ? first : second;
}

type Compiled = {
  readonly commands: readonly {
    readonly name: string;
    readonly risk: RuleRisk;
    readonly scope: CommandRuleScope;
    readonly regex: RegExp;
  }[];
  readonly paths: readonly { readonly name: string; readonly risk: RuleRisk; readonly regex: RegExp }[];
  readonly tools: Readonly<Record<string, RuleRisk>>;
};
const compiledRules = new WeakMap<SecurityRules, Compiled>();

function compile(rules: SecurityRules): Compiled {
  let compiled = compiledRules.get(rules);
  if (!compiled) {
    const enabled = <T extends { name: string }>(defaults: readonly T[]): T[] =>
      rules.defaults ? defaults.filter((rule) => !rules.disable.includes(rule.name)) : [];
    compiled = {
      commands: [...enabled(DEFAULT_COMMAND_RULES), ...rules.commands].map((rule) => ({
        name: rule.name,
        risk: rule.risk,
        scope: rule.scope ?? 'command',
        regex: new RegExp(rule.pattern, 'u'),
      })),
      paths: [...enabled(DEFAULT_PATH_RULES), ...rules.paths].map((rule) => ({
        name: rule.name,
        risk: rule.risk,
        regex: new RegExp(rule.pattern, 'u'),
      })),
      tools: rules.tools,
    };
    compiledRules.set(rules, compiled);
  }
  return compiled;
}

/** Tools the rules know to have no effect worth rating (their calls are low unless a tool rule says otherwise). */
const HARMLESS_TOOLS: ReadonlySet<string> = new Set(['think', 'finish', 'task_tracker', 'grep', 'glob']);

/**
 * What the rules find in one call: every matching rule, highest risk first, and their rating:
 * the highest finding, `low` for a tool they read and found nothing in, `unknown` for a tool
 * they cannot read (neither built in nor named in `rules.tools`, and not read-only).
 */
export function ruleFindings(
  toolName: string,
  input: Readonly<Record<string, unknown>>,
  rules: SecurityRules,
  tools: ToolCatalog,
): { risk: SecurityRisk; findings: SecurityFinding[] } {
  const compiled = compile(rules);
  const findings: SecurityFinding[] = [];
  const add = (finding: SecurityFinding): void => {
    if (!findings.some((known) => known.rule === finding.rule && known.subject === finding.subject))
      findings.push(finding);
  };
  const checkPaths = (paths: readonly string[]): void => {
    for (const path of paths) {
      const resolved = resolvePath(path);
      for (const rule of compiled.paths)
        if (rule.regex.test(resolved))
          add({ rule: rule.name, risk: rule.risk, subject: `${toolName} path ${JSON.stringify(clip(path))}` });
    }
  };
  let read = tools.isReadOnly(toolName) || HARMLESS_TOOLS.has(toolName);
  if (toolName === 'terminal' && typeof input['command'] === 'string') {
    read = true;
    const command = input['command'];
    const subject = `${toolName} command`;
    const text = command.replace(/\s+/gu, ' ').trim();
    for (const rule of compiled.commands)
      if (rule.scope === 'text' && rule.regex.test(text)) add({ rule: rule.name, risk: rule.risk, subject });
    for (const pipeline of shellPipelines(command)) {
      const texts = pipeline.map((simple) => simple.words.join(' '));
      for (const rule of compiled.commands) {
        if (
          rule.scope === 'command'
            ? texts.some((line) => rule.regex.test(line))
            : rule.scope === 'pipeline' && rule.regex.test(texts.join(' | '))
        )
          add({ rule: rule.name, risk: rule.risk, subject });
      }
      for (const simple of pipeline) checkPaths([...simple.writes, ...commandWrites(simple)]);
    }
  } else if (toolName === 'file_editor' && typeof input['path'] === 'string') {
    read = true;
    if (input['command'] !== 'view') checkPaths([input['path']]);
  } else if (toolName === 'apply_patch' && typeof input['patch'] === 'string') {
    read = true;
    const parsed = parsePatch(input['patch']);
    // a patch that does not parse is refused by the tool, and writes nothing
    if (parsed.ok)
      checkPaths(
        parsed.changes.flatMap((change) =>
          change.kind === 'update' && change.moveTo !== undefined ? [change.path, change.moveTo] : [change.path],
        ),
      );
  }
  const named = compiled.tools[toolName];
  if (named !== undefined) {
    read = true;
    add({ rule: `tool ${toolName}`, risk: named, subject: `${toolName} call` });
  }
  findings.sort((first, second) => RISK_RANK[second.risk] - RISK_RANK[first.risk]);
  return { risk: findings[0]?.risk ?? (read ? 'low' : 'unknown'), findings };
}

/** The path as the rules see it: absolute against /workspace, `..` resolved, a home prefix as `~`. */
function resolvePath(path: string): string {
  const home = /^(?:~|\$HOME|\$\{HOME\})(?=\/|$)/u.exec(path);
  if (home) return `~${posix.normalize(`/${path.slice(home[0].length)}`).replace(/\/$/u, '')}`;
  const resolved = posix.resolve('/workspace', path);
  return resolved;
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

/**
 * Rates the actions of one reply with the configured analyzers: each executable action's
 * `security_risk` becomes the highest of their ratings (`highestRisk`). The model's rating is
 * the one `toolCallEvents` read from the call; without the `model` analyzer it is ignored. An
 * action that cannot run (input null) keeps what it had.
 */
export function assessActions(
  drafts: readonly EventDraft[],
  security: SecurityConfig,
  tools: ToolCatalog,
): { drafts: EventDraft[]; assessments: Map<string, SecurityAssessment> } {
  const assessments = new Map<string, SecurityAssessment>();
  const useModel = security.analyzers.includes('model');
  const useRules = security.analyzers.includes('rules');
  const rated = drafts.map((draft) => {
    if (draft.type !== 'action' || draft.input === null) return draft;
    const model = useModel ? draft.security_risk : undefined;
    const rules = useRules ? ruleFindings(draft.tool_name, draft.input, security.rules, tools) : undefined;
    const risk =
      model !== undefined && rules !== undefined ? highestRisk(model, rules.risk) : (model ?? rules?.risk ?? 'unknown');
    assessments.set(draft.id, { risk, model, findings: rules?.findings ?? [] });
    return risk === draft.security_risk ? draft : { ...draft, security_risk: risk };
  });
  return { drafts: rated, assessments };
}

/** The confirmation policy as this file reads it (`ConfirmationPolicy` in agent-config.ts, which imports this file). */
type ConfirmationPolicyLike =
  { readonly mode: 'never' | 'always' } | { readonly mode: 'risky'; readonly threshold: RuleRisk };

/**
 * The `reason` of the `waiting_for_confirmation` the step appends: why these actions ask, naming
 * the rule (`terminal command matches "rm -rf outside the workspace" (high)`) or the model's
 * rating that reached the policy's threshold.
 */
export function confirmationReason(
  drafts: readonly EventDraft[],
  assessments: ReadonlyMap<string, SecurityAssessment>,
  policy: ConfirmationPolicyLike,
  tools: ToolCatalog,
): string {
  if (policy.mode !== 'risky') return 'actions need confirmation';
  const threshold = RISK_RANK[policy.threshold];
  const why: string[] = [];
  for (const draft of drafts) {
    if (
      draft.type !== 'action' ||
      draft.input === null ||
      tools.isReadOnly(draft.tool_name) ||
      RISK_RANK[draft.security_risk] < threshold
    )
      continue;
    const assessment = assessments.get(draft.id);
    const finding = assessment?.findings.find((candidate) => RISK_RANK[candidate.risk] >= threshold);
    if (finding) why.push(`${finding.subject} matches "${finding.rule}" (${finding.risk})`);
    else if (draft.security_risk === 'unknown')
      why.push(`${draft.tool_name} call has no risk rating (unknown counts as high)`);
    else why.push(`${draft.tool_name} call rated ${draft.security_risk} by the model`);
  }
  if (why.length === 0) return 'actions need confirmation';
  const shown = [...new Set(why)];
  const listed = shown.length > 3 ? `${shown.slice(0, 3).join('; ')}; and ${shown.length - 3} more` : shown.join('; ');
  return `actions need confirmation: ${listed}`;
}
