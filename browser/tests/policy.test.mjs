// SPDX-License-Identifier: Apache-2.0
import { test } from "node:test";
import assert from "node:assert/strict";
import { isExcluded, messageFor, normalizeDomain, parseDomainList, settingsFrom, urlRefusal } from "../extension/lib/policy.js";
import { webExtensionAPI, isFirefox } from "../extension/lib/api.js";

const on = settingsFrom({});
const tab = (url, extra = {}) => ({ id: 1, active: true, incognito: false, url, title: "T", ...extra });

test("an http(s) page of a normal window is published as a page", () => {
  assert.deepEqual(messageFor(tab("https://example.com/a?b#c"), on),
    { type: "page", url: "https://example.com/a?b#c", title: "T", searchable: false });
  assert.equal(messageFor(tab("http://127.0.0.1:8080/x"), on).type, "page");
});

test("a page without a title yet is published under its URL", () => {
  assert.equal(messageFor(tab("https://example.com/", { title: "" }), on).title, "https://example.com/");
});

test("never published: private tabs, other schemes, credentials, no tab, switched off", () => {
  const refused = [
    tab("https://example.com/", { incognito: true }),
    tab("about:blank"), tab("about:newtab"), tab("chrome://settings/"), tab("file:///home/u/a.txt"),
    tab("data:text/html,hi"), tab("moz-extension://abc/options.html"), tab("chrome-extension://abc/options.html"),
    tab("view-source:https://example.com/"), tab("javascript:alert(1)"),
    tab("https://user:pw@example.com/"), tab("https://user@example.com/"),
    tab(undefined), tab(""), undefined,
  ];
  for (const t of refused) assert.deepEqual(messageFor(t, on), { type: "none" }, JSON.stringify(t));
  assert.deepEqual(messageFor(tab("https://example.com/"), settingsFrom({ enabled: false })), { type: "none" });
});

test("excluded domains cover their subdomains only", () => {
  const settings = settingsFrom({ excludedDomains: ["bank.example"] });
  for (const url of ["https://bank.example/", "https://www.bank.example/login", "https://BANK.example./x"]) {
    assert.deepEqual(messageFor(tab(url), settings), { type: "none" }, url);
  }
  for (const url of ["https://notbank.example/", "https://bank.example.org/", "https://example/"]) {
    assert.equal(messageFor(tab(url), settings).type, "page", url);
  }
  assert.ok(isExcluded("a.b.c", ["b.c"]));
  assert.ok(!isExcluded("ab.c", ["b.c"]));
});

test("the search option is passed on", () => {
  assert.equal(messageFor(tab("https://example.com/"), settingsFrom({ searchable: true })).searchable, true);
});

test("domain lines are normalized; junk is dropped", () => {
  assert.equal(normalizeDomain(" https://User@Mail.Example.org:8443/inbox "), "mail.example.org");
  assert.equal(normalizeDomain("*.example.com"), "example.com");
  assert.equal(normalizeDomain(".example.com."), "example.com");
  assert.equal(normalizeDomain("   "), null);
  assert.equal(normalizeDomain("two words"), null);
  assert.deepEqual(parseDomainList("a.example\n\nA.example, b.example\n*.c.example"), ["a.example", "b.example", "c.example"]);
});

test("malformed stored settings fall back to the defaults", () => {
  assert.deepEqual(settingsFrom({ enabled: "yes", searchable: 1, excludedDomains: "x" }), { enabled: true, searchable: false, excludedDomains: [] });
  assert.deepEqual(settingsFrom(undefined), { enabled: true, searchable: false, excludedDomains: [] });
});

test("urlRefusal names the reason", () => {
  assert.equal(urlRefusal("https://example.com/"), null);
  assert.match(urlRefusal("ftp://example.com/"), /scheme/);
  assert.match(urlRefusal("https://u:p@example.com/"), /credentials/);
  assert.equal(urlRefusal("not a url"), "not a URL");
});

test("browser.* is preferred to chrome.*, in one place", () => {
  const firefox = { browser: { id: "ff" }, chrome: { id: "ch" } };
  assert.equal(webExtensionAPI(firefox).id, "ff");
  assert.ok(isFirefox(firefox));
  assert.equal(webExtensionAPI({ chrome: { id: "ch" } }).id, "ch");
  assert.ok(!isFirefox({ chrome: {} }));
});
