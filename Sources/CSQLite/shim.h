// SPDX-License-Identifier: Apache-2.0
// What Swift cannot take from <sqlite3.h> directly.
#pragma once
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot express.
static inline int csqlite_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}
static inline int csqlite_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *data, int length) {
    return sqlite3_bind_blob(stmt, index, data, length, SQLITE_TRANSIENT);
}

// malloc_trim is glibc's and lives in <malloc.h>, which Swift's Glibc module
// does not export: the search index calls this after dropping its old
// arrays so that a merge's peak does not stay resident.
#if defined(__GLIBC__)
#include <malloc.h>
static inline void activitystore_release_free_memory(void) { malloc_trim(0); }
#else
static inline void activitystore_release_free_memory(void) {}
#endif

// getrandom is in <sys/random.h>, which Swift's Glibc module does not export
// either: one call fills a saved ID's random bits where the standard
// library's generator makes one system call per 64 bits. 1 when `length`
// bytes were filled.
#if defined(__linux__)
#include <sys/random.h>
static inline int activitystore_random_bytes(void *buffer, size_t length) {
    return getrandom(buffer, length, 0) == (ssize_t)length;
}
#else
static inline int activitystore_random_bytes(void *buffer, size_t length) { (void)buffer; (void)length; return 0; }
#endif
