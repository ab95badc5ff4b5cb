import path from 'node:path';

export type UrlVerdict = { readonly ok: true; readonly url: string } | { readonly ok: false; readonly reason: string };

/**
 * Whether the model may open `requested`: http and https (what they reach is the sandbox's
 * network mode's business), about:blank, and file:// only for files of the workspace as the
 * sandbox sees it (`workspacePath`). Anything else (javascript:, data:, chrome:, view-source:…)
 * is refused, so the model drives pages only through the actions.
 */
export function checkUrl(requested: string, workspacePath: string): UrlVerdict {
  let url: URL;
  try {
    url = new URL(requested);
  } catch {
    return {
      ok: false,
      reason: `"${requested}" is not an absolute URL: give the scheme, e.g. https://example.com or file://${workspacePath}/page.html.`,
    };
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') return { ok: true, url: url.href };
  if (url.href === 'about:blank') return { ok: true, url: url.href };
  if (url.protocol === 'file:') {
    if (url.host !== '' && url.host !== 'localhost')
      return { ok: false, reason: `file:// URLs name files of this sandbox only, not of host "${url.host}".` };
    let filePath: string;
    try {
      filePath = path.posix.normalize(decodeURIComponent(url.pathname));
    } catch {
      return { ok: false, reason: `"${requested}" is not a valid file URL.` };
    }
    const root = path.posix.normalize(workspacePath).replace(/\/$/, '');
    if (filePath === root || filePath.startsWith(`${root}/`)) return { ok: true, url: url.href };
    return { ok: false, reason: `file:// URLs may only open files of the workspace (under ${root}/).` };
  }
  return {
    ok: false,
    reason: `The scheme "${url.protocol}" is not allowed: use http, https, file (workspace files only) or about:blank.`,
  };
}
