// SPDX-License-Identifier: Apache-2.0
// The one place where Firefox (browser.*) and Chromium (chrome.*) differ.
// Both offer promise-returning APIs under Manifest V3; Firefox names the
// namespace `browser`, Chromium `chrome`.

/** The WebExtension API object of the browser running the extension. */
export function webExtensionAPI(scope = globalThis) {
  return scope.browser ?? scope.chrome;
}

/** Whether this is Firefox (whose namespace is `browser`). */
export function isFirefox(scope = globalThis) {
  return typeof scope.browser !== "undefined";
}

/** Extension pages have their own scheme per browser. */
export const extensionSchemes = ["moz-extension:", "chrome-extension:"];
