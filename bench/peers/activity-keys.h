/* SPDX-License-Identifier: Apache-2.0
 *
 * The activity keys of the contract (dbus/org.example.UserActivity.xml) and their
 * D-Bus types, shared by both bench peers so they check exactly the same.
 */
#ifndef BENCH_PEERS_ACTIVITY_KEYS_H
#define BENCH_PEERS_ACTIVITY_KEYS_H

static const struct {
    const char *key;
    const char *signature;
} known_keys[] = {
    {"app-id", "s"},
    {"title", "s"},
    {"user-info", "a{sv}"},
    {"required-user-info-keys", "as"},
    {"keywords", "as"},
    {"content-description", "s"},
    {"content-attributes", "a{sv}"},
    {"webpage-url", "s"},
    {"referrer-url", "s"},
    {"target-content-identifier", "s"},
    {"persistent-identifier", "s"},
    {"expiration-date", "x"},
    {"eligible-for-handoff", "b"},
    {"eligible-for-search", "b"},
    {"eligible-for-public-indexing", "b"},
    {"eligible-for-prediction", "b"},
    {"suggested-invocation-phrase", "s"},
    {"needs-save", "b"},
    {"supports-continuation-streams", "b"},
};

#endif
