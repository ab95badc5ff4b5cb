/** Where the workspace is seen inside an isolating sandbox. */
export const SANDBOX_WORKSPACE = '/workspace';
/** Where the service's own files for the conversation (terminal FIFOs, saved outputs) are seen, read-only. */
export const SANDBOX_PRIVATE = '/run/flotilla';
/** HOME inside an isolating sandbox (memory-backed, private to the sandbox). */
export const SANDBOX_HOME = '/home/agent';
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment of a sandboxed process, built from scratch: never the service's own (no
 * provider keys, no FLOTILLA_* settings, no NATS address). The conversation's secrets come first
 * so that none of them can replace the base variables.
 */
export function sandboxEnvironment(
  home: string,
  ...extra: readonly (Readonly<Record<string, string>> | undefined)[]
): Record<string, string> {
  return Object.assign({}, ...extra, {
    PATH: SANDBOX_PATH,
    HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
  }) as Record<string, string>;
}
