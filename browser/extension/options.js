// SPDX-License-Identifier: Apache-2.0
import { webExtensionAPI } from "./lib/api.js";
import { parseDomainList, settingsFrom } from "./lib/policy.js";

const api = webExtensionAPI();
const excluded = document.getElementById("excluded");
const searchable = document.getElementById("searchable");
const status = document.getElementById("status");

async function load() {
  const settings = settingsFrom(await api.storage.local.get(null));
  excluded.value = settings.excludedDomains.join("\n");
  searchable.checked = settings.searchable;
}

document.getElementById("save").addEventListener("click", async () => {
  const domains = parseDomainList(excluded.value);
  await api.storage.local.set({ excludedDomains: domains, searchable: searchable.checked });
  excluded.value = domains.join("\n");
  status.textContent = "Saved.";
});

load();
