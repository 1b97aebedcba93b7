// SPDX-License-Identifier: Apache-2.0
// A fake WebExtension API: windows with tabs, events fired by the test, a
// native port that records what the extension sends.

class Event {
  constructor() { this.listeners = []; }
  addListener(f) { this.listeners.push(f); }
  fire(...args) { for (const f of this.listeners) f(...args); }
}

export class FakePort {
  constructor(name) {
    this.name = name;
    this.sent = [];
    this.connected = true;
    this.onMessage = new Event();
    this.onDisconnect = new Event();
  }
  postMessage(m) {
    if (!this.connected) throw new Error("disconnected port");
    this.sent.push(structuredClone(m));
  }
  disconnect() { this.connected = false; }
  /** The host went away. */
  crash() { this.connected = false; this.onDisconnect.fire(this); }
}

export class FakeBrowser {
  constructor() {
    this.windows = new Map(); // id → { id, incognito, tabs: [tab] }
    this.focusedWindowId = null;
    this.storageData = {};
    this.ports = [];
    this.badge = "";
    this.timers = [];
    const self = this;
    this.api = {
      tabs: {
        onActivated: new Event(), onUpdated: new Event(), onRemoved: new Event(),
        async query(q) {
          const w = self.windows.get(self.focusedWindowId);
          if (!w || !(q.active && q.lastFocusedWindow)) return [];
          return w.tabs.filter((t) => t.active).map((t) => ({ ...t, incognito: w.incognito }));
        },
      },
      windows: { WINDOW_ID_NONE: -1, onRemoved: new Event(), onFocusChanged: new Event() },
      storage: {
        onChanged: new Event(),
        local: {
          async get() { return structuredClone(self.storageData); },
          async set(values) { Object.assign(self.storageData, structuredClone(values)); },
        },
      },
      action: {
        onClicked: new Event(),
        async setBadgeText({ text }) { self.badge = text; },
        async setTitle() {},
      },
      runtime: {
        lastError: undefined,
        connectNative(name) { const p = new FakePort(name); self.ports.push(p); return p; },
      },
    };
    this.fakeTimers = {
      setTimeout: (f, ms) => { const t = { f, ms }; self.timers.push(t); return t; },
      clearTimeout: (t) => { self.timers = self.timers.filter((x) => x !== t); },
    };
  }

  get port() { return this.ports.at(-1); }
  /** Everything sent on every port, in order. */
  get sent() { return this.ports.flatMap((p) => p.sent); }

  openWindow(id, { incognito = false } = {}) {
    this.windows.set(id, { id, incognito, tabs: [] });
    this.focusedWindowId = id;
    this.api.windows.onFocusChanged.fire(id);
  }
  openTab(windowId, tabId, url, title) {
    const w = this.windows.get(windowId);
    for (const t of w.tabs) t.active = false;
    const tab = { id: tabId, windowId, active: true, url, title };
    w.tabs.push(tab);
    this.api.tabs.onActivated.fire({ tabId, windowId });
    return tab;
  }
  activate(windowId, tabId) {
    const w = this.windows.get(windowId);
    for (const t of w.tabs) t.active = t.id === tabId;
    this.api.tabs.onActivated.fire({ tabId, windowId });
  }
  navigate(tab, url, title) {
    tab.url = url;
    tab.title = title;
    this.api.tabs.onUpdated.fire(tab.id, { url, title }, { ...tab });
  }
  retitle(tab, title) {
    tab.title = title;
    this.api.tabs.onUpdated.fire(tab.id, { title }, { ...tab });
  }
  focus(windowId) {
    this.focusedWindowId = windowId === -1 ? this.focusedWindowId : windowId;
    this.api.windows.onFocusChanged.fire(windowId);
  }
  closeWindow(id) {
    this.windows.delete(id);
    if (this.focusedWindowId === id) this.focusedWindowId = [...this.windows.keys()].at(-1) ?? null;
    this.api.windows.onRemoved.fire(id);
  }
  runTimers() {
    const due = this.timers;
    this.timers = [];
    for (const t of due) t.f();
  }
}
