/**
 * The rules the `rules` security analyzer applies unless told otherwise (`security.rules`,
 * docs/security.md). A safety net that names what a model is about to do, not a sandbox: a
 * command can always be written so that no rule sees it (a variable, a script the agent writes
 * first, another language), and the sandbox is what bounds it (DESIGN.md invariant 11).
 *
 * Command rules are regular expressions tested against each simple command as the analyzer reads
 * it (`shell-commands.ts`): words with quotes removed, joined by one space, the program first
 * without its directory, and the commands behind `sudo`, `env`, `xargs`, `sh -c`, `eval` and
 * `$(…)` read as well. Flags may come in any order and clustered (`-rf`, `-fr`, `-r -f`), so the
 * rules look for them with lookaheads. `pipeline` rules see a pipeline's commands joined by ` | `;
 * `text` rules the command as written, its whitespace collapsed.
 *
 * Path rules are tested against each path a call writes (file_editor other than `view`,
 * apply_patch, the terminal's redirections and the files of tee, cp, mv, dd of=, rm, chmod…),
 * made absolute against /workspace with `..` resolved, and `~` or `$HOME` kept as `~`.
 */
export type RuleRisk = 'low' | 'medium' | 'high';
export type CommandRuleScope = 'command' | 'pipeline' | 'text';
export type CommandRuleSpec = {
  readonly name: string;
  readonly risk: RuleRisk;
  readonly pattern: string;
  readonly scope?: CommandRuleScope;
};
export type PathRuleSpec = { readonly name: string; readonly risk: RuleRisk; readonly pattern: string };

/** A recursive flag of rm (-r, -R, in any cluster, or --recursive). */
const RECURSIVE = String.raw`(?=.* (?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(?: |$))`;
/** git and its global options, before the subcommand (`git -C dir push`, not `git stash push`). */
const GIT = String.raw`^git(?: (?:-[Cc] [^ ]+|-[^ ]+))*`;
const SHELL_NAMES = String.raw`(?:(?:ba|z|da|k|a|fi)?sh|python[0-9.]*|perl|ruby|node|php)`;

export const DEFAULT_COMMAND_RULES: readonly CommandRuleSpec[] = [
  // high: irreversible, outside the task, or a way around the model's own judgement
  {
    name: 'rm -rf outside the workspace',
    risk: 'high',
    pattern: String.raw`^rm${RECURSIVE}.* (?:/\*?|/(?!workspace(?:[/ ]|$)|tmp(?:[/ ]|$))[^ ]*|~[^ ]*|\$\{?HOME\}?[^ ]*|\.\.(?:/[^ ]*)?)(?: |$)`,
  },
  {
    name: 'rm -rf of the whole workspace',
    risk: 'high',
    pattern: String.raw`^rm${RECURSIVE}.* (?:\*|\.\*|\./?\*?|/workspace/?\*?)(?: |$)`,
  },
  {
    name: 'git push --force',
    risk: 'high',
    pattern: String.raw`${GIT} push(?: .*)? (?:-[a-zA-Z]*f[a-zA-Z]*|--force[^ ]*|--mirror|\+[^ ]+)(?: |$)`,
  },
  {
    name: 'a download piped into a shell',
    risk: 'high',
    scope: 'pipeline',
    pattern: String.raw`(?:^|\| )(?:curl|wget|aria2c|fetch)(?: [^|]*)?(?: \| [^|]*)* \| (?:(?:sudo|doas|env|exec|command)(?: -[^ ]+)* )?${SHELL_NAMES}(?: |$)`,
  },
  {
    name: 'a download run as a script',
    risk: 'high',
    pattern: String.raw`^(?:${SHELL_NAMES}|source|\.|eval)(?: .*)? [$<]\( *(?:curl|wget)(?: |\))`,
  },
  {
    name: 'dd to a device',
    risk: 'high',
    pattern: String.raw`^dd(?: .*)? of=/dev/(?!(?:null|zero|stdout|stderr)(?: |$))`,
  },
  {
    name: 'formatting or wiping a disk',
    risk: 'high',
    pattern: String.raw`^(?:mkfs(?:\.[^ ]+)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|cfdisk|parted|sgdisk|blkdiscard)(?: |$)|^shred(?: .*)? /dev/`,
  },
  {
    name: 'chmod -R 777',
    risk: 'high',
    pattern: String.raw`^chmod(?=.* (?:-[a-zA-Z]*R[a-zA-Z]*|--recursive)(?: |$)).* (?:0?777|(?:a|ugo)[+=]rwx)(?: |$)`,
  },
  { name: 'sudo or another user', risk: 'high', pattern: String.raw`^(?:sudo|doas|su|pkexec|runuser)(?: |$)` },
  {
    name: 'shutdown or reboot',
    risk: 'high',
    pattern: String.raw`^(?:shutdown|reboot|halt|poweroff)(?: |$)|^(?:init|telinit) [06]$|^systemctl(?: .*)? (?:poweroff|reboot|halt)(?: |$)`,
  },
  { name: 'killing every process', risk: 'high', pattern: String.raw`^kill(?: -[^ ]+)* -1$` },
  { name: 'a fork bomb', risk: 'high', scope: 'text', pattern: String.raw`:\(\) ?\{ ?:\|:? ?& ?\} ?;? ?:` },
  // medium: hard to undo, reaching outside the workspace, or running code from elsewhere
  { name: 'git reset --hard', risk: 'medium', pattern: String.raw`${GIT} reset(?: .*)? --hard(?: |$)` },
  {
    name: 'git clean -f',
    risk: 'medium',
    pattern: String.raw`${GIT} clean(?: .*)? (?:-[a-zA-Z]*f[a-zA-Z]*|--force)(?: |$)`,
  },
  {
    name: 'discarding git changes',
    risk: 'medium',
    pattern: String.raw`${GIT} (?:checkout(?: .*)? (?:-f|--force|--|\.)(?: |$)|restore(?: |$)|branch(?: .*)? (?:-[a-zA-Z]*D[a-zA-Z]*)(?: |$)|stash (?:drop|clear)(?: |$)|filter-branch|filter-repo)`,
  },
  { name: 'git push', risk: 'medium', pattern: String.raw`${GIT} push(?: |$)` },
  { name: 'rm -r', risk: 'medium', pattern: String.raw`^rm${RECURSIVE}` },
  { name: 'find -delete', risk: 'medium', pattern: String.raw`^find(?: .*)? (?:-delete|-exec rm)(?: |$)` },
  { name: 'chmod 777', risk: 'medium', pattern: String.raw`^chmod(?: .*)? (?:0?777|(?:a|ugo)[+=]rwx)(?: |$)` },
  {
    name: 'a package install',
    risk: 'medium',
    pattern:
      String.raw`^(?:npm|pnpm|yarn|bun)(?: .*)? (?:install|i|add|ci|update|upgrade)(?: |$)` +
      String.raw`|^(?:pip[0-9.]*|pipx|gem|cargo|conda|mamba|brew|apt|apt-get|aptitude|yum|dnf|zypper|apk|pacman|snap|port|choco|go|composer|poetry|uv)(?: (?:-[^ ]+|[a-z]+))*? (?:install|add|get|sync|-S[a-z]*)(?: |$)` +
      String.raw`|^python[0-9.]* -m pip install(?: |$)`,
  },
  {
    name: 'running a downloaded package',
    risk: 'medium',
    pattern: String.raw`^(?:npx|pnpx|bunx|uvx)(?: |$)|^(?:pnpm|yarn) dlx(?: |$)|^pipx run(?: |$)`,
  },
  {
    name: 'a network fetch',
    risk: 'medium',
    pattern: String.raw`^(?:curl|wget|aria2c|nc|ncat|netcat|socat|telnet|ssh|scp|sftp|ftp|http|https|xh)(?: |$)|^rsync(?: .*)? [^ /-][^ /]*:|${GIT} (?:clone|fetch|pull|ls-remote)(?: |$)`,
  },
  {
    name: 'system services',
    risk: 'medium',
    pattern: String.raw`^(?:systemctl|service|crontab|launchctl|update-rc\.d|chkconfig)(?: |$)`,
  },
  { name: 'killing processes by name', risk: 'medium', pattern: String.raw`^(?:pkill|killall)(?: |$)` },
  {
    name: 'containers and cloud',
    risk: 'medium',
    pattern: String.raw`^(?:docker|podman|kubectl|helm|terraform|tofu|pulumi|aws|gcloud|az|doctl|flyctl|heroku|vercel|netlify)(?: |$)`,
  },
];

export const DEFAULT_PATH_RULES: readonly PathRuleSpec[] = [
  {
    name: 'system paths',
    risk: 'high',
    pattern: String.raw`^/(?:etc|usr|bin|sbin|lib|lib32|lib64|libx32|boot|root|sys|proc|opt|srv|var(?!/tmp(?:/|$)))(?:/|$)|^/dev/(?!(?:null|zero|stdout|stderr|tty)$|fd/)`,
  },
  { name: 'ssh keys', risk: 'high', pattern: String.raw`(?:^|/)\.ssh(?:/|$)` },
  {
    name: 'outside the workspace',
    risk: 'medium',
    pattern: String.raw`^~|^/(?!workspace(?:/|$)|tmp(?:/|$)|dev/(?:null|zero|stdout|stderr|tty)$|dev/fd/)`,
  },
  {
    name: 'shell startup files',
    risk: 'medium',
    pattern: String.raw`(?:^|/)\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv)$`,
  },
  { name: 'git hooks and config', risk: 'medium', pattern: String.raw`(?:^|/)\.git/(?:hooks(?:/|$)|config$)` },
  {
    name: 'CI configuration',
    risk: 'medium',
    pattern: String.raw`(?:^|/)(?:\.github/workflows/|\.gitlab-ci\.ya?ml$|\.circleci/|Jenkinsfile$|azure-pipelines\.ya?ml$)`,
  },
  {
    name: 'credential files',
    risk: 'medium',
    pattern: String.raw`(?:^|/)(?:\.env(?:\.[^/]*)?|\.npmrc|\.pypirc|\.netrc|\.git-credentials|credentials|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|[^/]+\.pem)$`,
  },
];
