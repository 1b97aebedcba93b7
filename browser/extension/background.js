// SPDX-License-Identifier: Apache-2.0
import { webExtensionAPI } from "./lib/api.js";
import { Tracker } from "./lib/tracker.js";

new Tracker(webExtensionAPI()).start();
