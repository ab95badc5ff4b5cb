/**
 * How Chromium starts inside a sandbox: `sh -c CHROMIUM_SCRIPT sh <flags>`. The script makes a
 * profile in the sandbox's own private /tmp (gone with the process), a fontconfig file (the
 * sandbox's /etc holds no fonts configuration), moves stdin and stdout to fds 3 and 4 where
 * `--remote-debugging-pipe` speaks CDP, sends Chromium's own output to stderr, and runs the first
 * Chromium it finds (the Debian package's binary directly: its launcher script reads /etc/chromium.d,
 * which the sandbox does not have).
 */
export const CHROMIUM_SCRIPT = `set -e
dir=$(mktemp -d "\${TMPDIR:-/tmp}/flotilla-browser.XXXXXX")
mkdir -p "$dir/profile" "$dir/config" "$dir/cache" "$dir/fontconfig"
cat > "$dir/fonts.conf" <<EOF
<?xml version="1.0"?>
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>/usr/share/fonts</dir>
  <dir>/usr/local/share/fonts</dir>
  <cachedir>$dir/fontconfig</cachedir>
</fontconfig>
EOF
export FONTCONFIG_FILE="$dir/fonts.conf" XDG_CONFIG_HOME="$dir/config" XDG_CACHE_HOME="$dir/cache"
for candidate in /usr/lib/chromium/chromium chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$candidate" >/dev/null 2>&1; then
    exec 3<&0 4>&1 1>&2
    exec "$candidate" "$@" "--user-data-dir=$dir/profile"
  fi
done
echo "no Chromium inside the sandbox: install the chromium package (Debian: apt-get install chromium)" >&2
exit 127
`;

/**
 * Chromium's flags. `--no-sandbox`: the sandbox it runs in already isolates it, and its own needs
 * user namespaces, which the sandbox forbids (bwrap's `--disable-userns`). No GPU, no /dev/shm
 * (bwrap's is tiny), none of Google's background services (nothing to reach under network `none`).
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless=new',
  '--remote-debugging-pipe',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-extensions',
  '--disable-component-extensions-with-background-pages',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-default-apps',
  '--disable-sync',
  '--disable-breakpad',
  '--disable-crash-reporter',
  '--disable-domain-reliability',
  '--disable-client-side-phishing-detection',
  '--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,DialMediaRouteProvider',
  '--metrics-recording-only',
  '--password-store=basic',
  '--use-mock-keychain',
  '--mute-audio',
  '--hide-scrollbars',
  '--force-color-profile=srgb',
  'about:blank',
];

/** The command and arguments to give `Sandbox.spawn`. */
export function chromiumCommand(): { readonly command: string; readonly args: readonly string[] } {
  return { command: 'sh', args: ['-c', CHROMIUM_SCRIPT, 'sh', ...CHROMIUM_FLAGS] };
}
