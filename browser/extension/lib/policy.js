// SPDX-License-Identifier: Apache-2.0
// What may be published: pure functions, tested without a browser.

/** The activity type of a web page (the service's system type). */
export const activityType = "org.example.UserActivity.browsing-web";

/** The settings and their defaults (kept in storage.local). */
export const defaultSettings = Object.freeze({
  enabled: true,
  searchable: false,
  excludedDomains: [],
});

/** The message that tells the host nothing may be published now. */
export const nothing = Object.freeze({ type: "none" });

/**
 * A domain as the options page stores it: lower case, without a scheme,
 * path, port, leading "*." or ".", or trailing dot; null for an empty or
 * unusable line.
 */
export function normalizeDomain(line) {
  let text = String(line ?? "").trim().toLowerCase();
  if (text === "") return null;
  const scheme = text.indexOf("://");
  if (scheme >= 0) text = text.slice(scheme + 3);
  text = text.split(/[/?#]/, 1)[0];
  const at = text.lastIndexOf("@");
  if (at >= 0) text = text.slice(at + 1);
  if (!text.startsWith("[")) text = text.replace(/:\d*$/, "");
  text = text.replace(/^\*\./, "").replace(/^\.+/, "").replace(/\.+$/, "");
  if (text === "" || /\s/.test(text)) return null;
  return text;
}

/** The options page's text (one domain a line) → the stored list, without duplicates. */
export function parseDomainList(text) {
  const seen = new Set();
  for (const line of String(text ?? "").split(/[\n,]/)) {
    const domain = normalizeDomain(line);
    if (domain !== null) seen.add(domain);
  }
  return [...seen];
}

/** Whether `hostname` is an excluded domain or under one. */
export function isExcluded(hostname, excludedDomains) {
  const host = String(hostname).toLowerCase().replace(/\.+$/, "");
  return excludedDomains.some((domain) => host === domain || host.endsWith("." + domain));
}

/**
 * The reason a URL may not leave the browser, or null when it may:
 * http(s) only, with a host, without user name or password.
 */
export function urlRefusal(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `scheme ${parsed.protocol}`;
  if (parsed.hostname === "") return "no host";
  if (parsed.username !== "" || parsed.password !== "") return "credentials in the URL";
  return null;
}

/**
 * The message for the host, given the active tab of the focused window
 * (undefined when there is none) and the settings.
 */
export function messageFor(tab, settings) {
  if (!settings.enabled || !tab || tab.incognito) return nothing;
  const url = tab.url ?? "";
  if (urlRefusal(url) !== null) return nothing;
  if (isExcluded(new URL(url).hostname, settings.excludedDomains)) return nothing;
  return {
    type: "page",
    url,
    title: tab.title && tab.title.length > 0 ? tab.title : url,
    searchable: Boolean(settings.searchable),
  };
}

/** Settings read from storage, with defaults for what is missing or malformed. */
export function settingsFrom(stored) {
  const s = stored ?? {};
  return {
    enabled: typeof s.enabled === "boolean" ? s.enabled : defaultSettings.enabled,
    searchable: typeof s.searchable === "boolean" ? s.searchable : defaultSettings.searchable,
    excludedDomains: Array.isArray(s.excludedDomains)
      ? s.excludedDomains.map(normalizeDomain).filter((d) => d !== null)
      : [],
  };
}
