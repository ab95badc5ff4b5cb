import { workspaceUsage } from '@flotilla/sandbox';

/** Whether the workspace uses more than `quotaBytes` (a bounded walk: a huge tree reads as not over). */
export async function isOverQuota(root: string, quotaBytes: number): Promise<boolean> {
  const usage = await workspaceUsage(root, { stopAboveBytes: quotaBytes, deadlineMs: 500 });
  return usage.bytes > quotaBytes;
}
