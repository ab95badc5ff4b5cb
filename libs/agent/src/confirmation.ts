import type { EventDraft } from '@flotilla/events';
import type { ConfirmationPolicy } from './agent-config.js';
import { RISK_RANK as RANK } from './security-analyzer.js';
import type { ToolCatalog } from './tool-catalog.js';

/** Do these freshly decided actions need the user's confirmation before they run? */
export function needsConfirmation(
  drafts: readonly EventDraft[],
  policy: ConfirmationPolicy,
  tools: ToolCatalog,
): boolean {
  if (policy.mode === 'never') return false;
  const executable = drafts.filter((draft) => draft.type === 'action' && draft.input !== null);
  if (policy.mode === 'always') return executable.length > 0;
  const threshold = RANK[policy.threshold];
  return executable.some(
    (draft) => draft.type === 'action' && !tools.isReadOnly(draft.tool_name) && RANK[draft.security_risk] >= threshold,
  );
}
