import type { Conversation } from '@flotilla/api';
import { FlotillaApiError, FlotillaClient } from '@flotilla/client';
import { AgentPicker } from './agent-picker.js';
import { adoptKeyFromFragment, forgetKey, loadKey, readFragment, saveKey, writeFragment } from './api-key.js';
import { ConversationList } from './conversation-list.js';
import { ConversationView } from './conversation-view.js';
import { byId, show } from './dom.js';
import { Drawer } from './drawer.js';
import { SchedulesPanel } from './schedules-panel.js';
import { TenantUsageLabel } from './tenant-usage.js';
import { ThemeToggle } from './theme.js';

/** The gateway serves this page at its root (or under a proxy's prefix): the API lives beside it. */
const BASE_URL = new URL('.', location.href).href;
const BANNER_MS = 10_000;

const keyScreen = byId('key-screen');
const workspace = byId('workspace');
const keyInput = byId<HTMLInputElement>('key-input');
const keyError = byId('key-error');
const forgetButton = byId('forget-key');
const tenantLabel = byId('tenant');
const banner = byId('banner');
const bannerText = byId('banner-text');

let client: FlotillaClient | undefined;
let connectedKey: string | undefined;
let bannerTimer: ReturnType<typeof setTimeout> | undefined;

const currentClient = (): FlotillaClient => {
  if (!client) throw new Error('not connected');
  return client;
};

new ThemeToggle(byId<HTMLButtonElement>('theme-toggle'));
const drawer = new Drawer(byId<HTMLButtonElement>('drawer-toggle'), workspace);
const picker = new AgentPicker();
const usage = new TenantUsageLabel(byId('tenant-usage'));
const list = new ConversationList(currentClient, {
  onSelect: (conversation) => openConversation(conversation.id, conversation, true),
  onError: report,
  agentChoice: () => picker.choice(),
});
const schedules = new SchedulesPanel(currentClient, { onError: report });
const view = new ConversationView(currentClient, {
  onProgress: (id, progress) => list.updateProgress(id, progress),
  onError: report,
  onUnauthorized: () =>
    showKeyScreen('The gateway closed the event stream: it did not accept this API key.', connectedKey),
});

/** Check the key against the gateway, then show the workspace. */
async function connect(key: string): Promise<void> {
  const candidate = new FlotillaClient({ baseUrl: BASE_URL, apiKey: key });
  try {
    await candidate.listConversations({ limit: 1 });
  } catch (error) {
    if (isUnauthorized(error)) {
      forgetKey();
      showKeyScreen('The gateway refused this API key. Check it and try again.');
    } else {
      showKeyScreen(`Could not reach the gateway: ${describe(error)}`, key);
    }
    return;
  }
  saveKey(key);
  client = candidate;
  connectedKey = key;
  show(keyScreen, false);
  show(workspace, true);
  show(forgetButton, true);
  hideBanner();
  tenantLabel.textContent = '';
  void candidate.serverInfo().then(
    (info) => {
      if (client !== candidate) return;
      tenantLabel.textContent = `tenant ${info.tenant}`;
      picker.load(info.agents);
    },
    () => undefined,
  );
  await list.refresh().catch(report);
  list.start();
  schedules.start();
  usage.start(candidate);
  followLocation();
}

function showKeyScreen(message?: string, prefill = ''): void {
  list.stop();
  schedules.stop();
  usage.stop();
  view.close();
  client = undefined;
  connectedKey = undefined;
  show(workspace, false);
  show(forgetButton, false);
  show(keyScreen, true);
  tenantLabel.textContent = '';
  picker.clear();
  keyInput.value = prefill;
  keyError.textContent = message ?? '';
  show(keyError, message !== undefined);
  keyInput.focus();
}

function openConversation(id: string, conversation: Conversation | undefined, updateAddress: boolean): void {
  if (updateAddress) {
    const params = readFragment();
    if (params.get('c') !== id) {
      params.set('c', id);
      writeFragment(params, true);
    }
  }
  list.select(id);
  view.open(id, conversation?.title ?? list.find(id)?.title);
  drawer.close();
}

/** Follow the address: a new `#key=…` reconnects, `#c=…` opens that conversation. */
function followLocation(): void {
  const key = adoptKeyFromFragment() ?? loadKey();
  if (key !== undefined && key !== connectedKey) {
    void connect(key);
    return;
  }
  if (!client) return;
  const id = readFragment().get('c');
  if (id) openConversation(id, undefined, false);
  else {
    list.select(undefined);
    view.close();
  }
}

function report(error: unknown): void {
  if (isUnauthorized(error)) {
    forgetKey();
    showKeyScreen('The gateway refused this API key. Check it and try again.');
    return;
  }
  bannerText.textContent = describe(error);
  show(banner, true);
  clearTimeout(bannerTimer);
  bannerTimer = setTimeout(hideBanner, BANNER_MS);
}

function hideBanner(): void {
  clearTimeout(bannerTimer);
  show(banner, false);
}

function isUnauthorized(error: unknown): boolean {
  return error instanceof FlotillaApiError && error.status === 401;
}

function describe(error: unknown): string {
  if (error instanceof FlotillaApiError) {
    const issues = error.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    const retry = error.retryAfterSeconds === undefined ? '' : ` Try again in ${error.retryAfterSeconds} s.`;
    return `${error.message}${issues ? ` (${issues})` : ''}${retry}`;
  }
  return error instanceof Error ? error.message : String(error);
}

byId('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (key !== '') void connect(key);
});
forgetButton.addEventListener('click', () => {
  forgetKey();
  showKeyScreen();
});
byId('banner-close').addEventListener('click', hideBanner);
window.addEventListener('popstate', followLocation);
window.addEventListener('hashchange', followLocation);

const initialKey = adoptKeyFromFragment() ?? loadKey();
if (initialKey === undefined) showKeyScreen();
else void connect(initialKey);
