// SPDX-License-Identifier: Apache-2.0
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tracker, hostName } from "../extension/lib/tracker.js";
import { FakeBrowser } from "./fake-browser.mjs";

const page = (url, title, searchable = false) => ({ type: "page", url, title, searchable });
const none = { type: "none" };

async function started(setup = () => {}) {
  const b = new FakeBrowser();
  setup(b);
  const tracker = new Tracker(b.api, b.fakeTimers);
  await tracker.start();
  await tracker.refreshing;
  return { b, tracker, settle: () => tracker.refreshing };
}

test("the page already open when the extension starts is published", async () => {
  const { b } = await started((b) => { b.openWindow(1); b.openTab(1, 10, "https://example.com/first", "First"); });
  assert.equal(b.port.name, hostName);
  assert.deepEqual(b.sent, [page("https://example.com/first", "First")]);
});

test("follows tab switch, navigation, title change, one port for all", async () => {
  const { b, settle } = await started((b) => b.openWindow(1));
  assert.equal(b.ports.length, 0, "no host until there is something to publish");
  const a = b.openTab(1, 10, "https://a.example/", "https://a.example/");
  await settle();
  b.retitle(a, "A");
  await settle();
  b.openTab(1, 11, "https://b.example/", "B");
  await settle();
  b.activate(1, 10);
  await settle();
  b.navigate(a, "https://a.example/next", "A next");
  await settle();
  assert.equal(b.ports.length, 1);
  assert.deepEqual(b.sent, [
    page("https://a.example/", "https://a.example/"), page("https://a.example/", "A"), page("https://b.example/", "B"),
    page("https://a.example/", "A"), page("https://a.example/next", "A next"),
  ]);
});

test("focus leaving the browser resigns; coming back publishes again; nothing is repeated", async () => {
  const { b, settle } = await started((b) => { b.openWindow(1); b.openTab(1, 10, "https://a.example/", "A"); });
  b.focus(-1);
  await settle();
  b.focus(-1);
  await settle();
  b.focus(1);
  await settle();
  assert.deepEqual(b.sent, [page("https://a.example/", "A"), none, page("https://a.example/", "A")]);
});

test("a private window, a non-web page and an excluded domain publish nothing", async () => {
  const { b, settle } = await started((b) => {
    b.storageData.excludedDomains = ["bank.example"];
    b.openWindow(1);
    b.openTab(1, 10, "https://a.example/", "A");
  });
  b.openWindow(2, { incognito: true });
  b.openTab(2, 20, "https://secret.example/", "Secret");
  await settle();
  b.focus(1);
  b.openTab(1, 11, "about:newtab", "New Tab");
  await settle();
  b.openTab(1, 12, "https://www.bank.example/account", "Account");
  await settle();
  b.openTab(1, 13, "https://u:p@a.example/", "Creds");
  await settle();
  const all = JSON.stringify(b.sent);
  for (const secret of ["secret.example", "newtab", "bank.example", "u:p@"]) assert.ok(!all.includes(secret), secret);
  assert.deepEqual(b.sent, [page("https://a.example/", "A"), none]);
});

test("closing the focused window moves to the window focused next", async () => {
  const { b, settle } = await started((b) => {
    b.openWindow(1); b.openTab(1, 10, "https://a.example/", "A");
    b.openWindow(2); b.openTab(2, 20, "https://b.example/", "B");
  });
  b.closeWindow(2);
  await settle();
  assert.deepEqual(b.sent.at(-1), page("https://a.example/", "A"));
});

test("switched off from the toolbar: the host is let go and nothing is sent until switched on", async () => {
  const { b, tracker, settle } = await started((b) => { b.openWindow(1); b.openTab(1, 10, "https://a.example/", "A"); });
  const first = b.port;
  await tracker.toggle();
  await settle();
  assert.equal(first.connected, false);
  assert.equal(b.badge, "off");
  assert.equal(b.storageData.enabled, false);
  b.openTab(1, 11, "https://b.example/", "B");
  await settle();
  assert.equal(b.ports.length, 1);
  assert.deepEqual(first.sent, [page("https://a.example/", "A")]);
  await tracker.toggle();
  await settle();
  assert.equal(b.badge, "");
  assert.equal(b.ports.length, 2);
  assert.deepEqual(b.port.sent, [page("https://b.example/", "B")]);
});

test("the search option reaches the host", async () => {
  const { b } = await started((b) => { b.storageData.searchable = true; b.openWindow(1); b.openTab(1, 10, "https://a.example/", "A"); });
  assert.deepEqual(b.sent, [page("https://a.example/", "A", true)]);
});

test("a host that goes away is started again later, with the current page", async () => {
  const { b, settle } = await started((b) => { b.openWindow(1); b.openTab(1, 10, "https://a.example/", "A"); });
  b.port.crash();
  assert.equal(b.timers.length, 1);
  assert.equal(b.timers[0].ms, 1000);
  b.runTimers();
  await settle();
  assert.equal(b.ports.length, 2);
  assert.deepEqual(b.port.sent, [page("https://a.example/", "A")]);
  b.port.crash();
  assert.equal(b.timers[0].ms, 2000, "backs off");
});
