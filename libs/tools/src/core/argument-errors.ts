import type { z } from 'zod';

function fieldName(pathSegments: readonly PropertyKey[]): string {
  if (pathSegments.length === 0) return '(the arguments object)';
  return pathSegments
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}

/** One line per zod issue, each naming the offending field. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map((issue) => `- ${fieldName(issue.path)}: ${issue.message}`).join('\n');
}
