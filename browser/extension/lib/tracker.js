// SPDX-License-Identifier: Apache-2.0
// Follows the person: the active tab of the focused window, sent to the
// native host over one long-lived port. The browser API is passed in, so
// that tests drive a fake one.
import { messageFor, nothing, settingsFrom } from "./policy.js";

/** The native-messaging host's name (its manifest's file name without .json). */
export const hostName = "org.example.useractivity";

const WINDOW_ID_NONE = -1;

export class Tracker {
  /**
   * @param api the WebExtension API (browser or chrome)
   * @param timers { setTimeout, clearTimeout } (injected for tests)
   */
  constructor(api, timers = globalThis) {
    this.api = api;
    this.timers = timers;
    this.settings = settingsFrom({});
    this.port = null;
    this.lastSent = null;
    this.focusLost = false;
    this.reconnectDelay = 1000;
    this.reconnectTimer = null;
    this.refreshing = Promise.resolve();
    this.hostError = null;
  }

  /** Registers the listeners (synchronously, as a service worker must), then reads the current state. */
  start() {
    const { tabs, windows, storage, action } = this.api;
    const refresh = () => this.refresh();
    tabs.onActivated.addListener(() => { this.focusLost = false; refresh(); });
    tabs.onUpdated.addListener((tabId, change, tab) => {
      if (tab?.active && ("url" in change || "title" in change || "status" in change)) refresh();
    });
    tabs.onRemoved.addListener(refresh);
    windows.onRemoved.addListener(refresh);
    windows.onFocusChanged.addListener((windowId) => {
      this.focusLost = windowId === (windows.WINDOW_ID_NONE ?? WINDOW_ID_NONE);
      refresh();
    });
    storage.onChanged.addListener((changes, area) => {
      if (area === "local") this.loadSettings().then(refresh);
    });
    action.onClicked.addListener(() => this.toggle());
    // The worker may start after the first page loaded: read the state now.
    return this.loadSettings().then(refresh);
  }

  async loadSettings() {
    this.settings = settingsFrom(await this.api.storage.local.get(null));
    await this.showState();
  }

  async toggle() {
    await this.api.storage.local.set({ enabled: !this.settings.enabled });
    await this.loadSettings();
    await this.refresh();
  }

  async showState() {
    const { action } = this.api;
    const on = this.settings.enabled;
    await action.setBadgeText({ text: on ? "" : "off" });
    await action.setTitle({ title: on ? "UserActivity: on (click to switch off)" : "UserActivity: off (click to switch on)" });
  }

  /** Recomputes what to publish; refreshes run one after another so the last one wins. */
  refresh() {
    this.refreshing = this.refreshing.then(() => this.refreshNow()).catch(() => {});
    return this.refreshing;
  }

  async refreshNow() {
    if (!this.settings.enabled) {
      // Switched off: the activity ends with the host.
      this.disconnect();
      return;
    }
    let message = nothing;
    if (!this.focusLost) {
      const [tab] = await this.api.tabs.query({ active: true, lastFocusedWindow: true });
      message = messageFor(tab, this.settings);
    }
    this.send(message);
  }

  send(message) {
    const text = JSON.stringify(message);
    if (text === this.lastSent) return;
    if (!this.port) {
      // Nothing to say yet: a host is started for something to publish.
      if (message.type !== "page" || this.reconnectTimer !== null) return;
      this.connect();
    }
    this.port.postMessage(message);
    this.lastSent = text;
  }

  connect() {
    const port = this.api.runtime.connectNative(hostName);
    this.port = port;
    this.lastSent = null;
    port.onMessage.addListener((reply) => {
      if (reply?.type === "error") this.hostError = reply.error;
      if (reply?.type === "ready") this.reconnectDelay = 1000;
    });
    port.onDisconnect.addListener(() => {
      if (this.port !== port) return;
      this.port = null;
      this.lastSent = null;
      this.hostError = this.api.runtime.lastError?.message ?? port.error?.message ?? "the host exited";
      // Try again later, backing off; no timer runs while connected or idle.
      this.reconnectTimer = this.timers.setTimeout(() => {
        this.reconnectTimer = null;
        this.refresh();
      }, this.reconnectDelay);
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, 60000);
    });
  }

  disconnect() {
    if (this.port) {
      const port = this.port;
      this.port = null;
      port.disconnect();
    }
    this.lastSent = null;
  }
}
