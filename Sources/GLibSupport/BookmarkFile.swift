// SPDX-License-Identifier: Apache-2.0
import CGLib
import UserActivityCore

/// Reads XBEL bookmark files (the desktop's recently-used list) with GLib's
/// `GBookmarkFile`, the parser GTK itself writes them with.
public enum BookmarkFile {
    /// Every bookmark of the file, in file order.
    ///
    /// - Throws: ``FileFailure`` with GLib's message when the file is missing
    ///   or is not valid XBEL.
    public static func read(path: String) throws -> [RecentFileEntry] {
        let file = g_bookmark_file_new()!
        defer { g_bookmark_file_free(file) }
        var error: UnsafeMutablePointer<GError>?
        guard g_bookmark_file_load_from_file(file, path, &error) != 0 else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            g_clear_error(&error)
            throw FileFailure(description: "cannot read \(path): \(message)")
        }
        var count: gsize = 0
        guard let uris = g_bookmark_file_get_uris(file, &count) else { return [] }
        defer { g_strfreev(uris) }
        var result: [RecentFileEntry] = []
        result.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            guard let raw = uris[index] else { continue }
            result.append(bookmark(file, uri: raw))
        }
        return result
    }

    private static func bookmark(_ file: OpaquePointer, uri raw: UnsafeMutablePointer<gchar>) -> RecentFileEntry {
        var entry = RecentFileEntry(uri: String(cString: raw))
        // Absent fields are GLib errors here; they only mean "not set".
        entry.title = take(g_bookmark_file_get_title(file, raw, nil)) ?? ""
        entry.mimeType = take(g_bookmark_file_get_mime_type(file, raw, nil)) ?? ""
        entry.isPrivate = g_bookmark_file_get_is_private(file, raw, nil) != 0
        entry.modified = microseconds(g_bookmark_file_get_modified_date_time(file, raw, nil))
        entry.visited = microseconds(g_bookmark_file_get_visited_date_time(file, raw, nil))
        var count: gsize = 0
        if let names = g_bookmark_file_get_applications(file, raw, &count, nil) {
            defer { g_strfreev(names) }
            for index in 0..<Int(count) {
                guard let name = names[index] else { continue }
                var exec: UnsafeMutablePointer<gchar>?
                var uses: guint = 0
                var stamp: OpaquePointer?
                guard g_bookmark_file_get_application_info(file, raw, name, &exec, &uses, &stamp, nil) != 0 else { continue }
                entry.applications.append(.init(name: String(cString: name), exec: take(exec) ?? "",
                                               count: UInt32(uses), stamp: microseconds(stamp)))
            }
        }
        return entry
    }

    /// A GLib-allocated string as Swift's, freed.
    private static func take(_ text: UnsafeMutablePointer<gchar>?) -> String? {
        guard let text else { return nil }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// A `GDateTime` the bookmark file owns, as Unix µs (0 for none).
    private static func microseconds(_ time: OpaquePointer?) -> Int64 {
        guard let time else { return 0 }
        return Int64(g_date_time_to_unix(time)) * 1_000_000 + Int64(g_date_time_get_microsecond(time))
    }
}

/// Reads GSettings keys of a schema that may not be installed: the lookup
/// comes first, so a missing schema or key is nil, never GLib's abort.
public enum DesktopSettings {
    /// A boolean key, nil when the schema or the key is not installed.
    public static func boolean(schema: String, key: String) -> Bool? {
        withSettings(schema: schema, key: key, type: "b") { g_settings_get_boolean($0, key) != 0 }
    }

    /// An integer (`i`) key, nil when the schema or the key is not installed.
    public static func integer(schema: String, key: String) -> Int32? {
        withSettings(schema: schema, key: key, type: "i") { g_settings_get_int($0, key) }
    }

    private static func withSettings<T>(schema id: String, key: String, type: String,
                                        _ body: (UnsafeMutablePointer<GSettings>) -> T) -> T? {
        guard let source = g_settings_schema_source_get_default(),
              let schema = g_settings_schema_source_lookup(source, id, CGLIB_TRUE) else { return nil }
        defer { g_settings_schema_unref(schema) }
        guard g_settings_schema_has_key(schema, key) != 0,
              let schemaKey = g_settings_schema_get_key(schema, key) else { return nil }
        // peek_string's text is not NUL-terminated: a copy is.
        let typeText = g_variant_type_dup_string(g_settings_schema_key_get_value_type(schemaKey))
        let matches = typeText.map { String(cString: $0) } == type
        g_free(typeText)
        g_settings_schema_key_unref(schemaKey)
        guard matches, let settings = g_settings_new_full(schema, nil, nil) else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(settings)) }
        return body(settings)
    }
}
