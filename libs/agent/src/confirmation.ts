import type { EventDraft, SecurityRisk } from '@flotilla/events';
import type { ConfirmationPolicy } from './agent-config.js';
import type { ToolCatalog } from './tool-catalog.js';

const RANK: Record<SecurityRisk, number> = { unknown: 3, low: 1, medium: 2, high: 3 };

/** Do these freshly decided actions need the user's confirmation before they run? */
export function needsConfirmation(drafts: readonly EventDraft[], policy: ConfirmationPolicy, tools: ToolCatalog): boolean {
  if (policy.mode === 'never') return false;
  const executable = drafts.filter((draft) => draft.type === 'action' && draft.input !== null);
  if (policy.mode === 'always') return executable.length > 0;
  const threshold = RANK[policy.threshold];
  return executable.some(
    (draft) => draft.type === 'action' && !tools.isReadOnly(draft.tool_name) && RANK[draft.security_risk] >= threshold,
  );
}
