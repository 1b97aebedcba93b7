// SPDX-License-Identifier: Apache-2.0
import CGLib

/// A parsed key file (desktop entry, `.flatpak-info`) read with GLib's own
/// `GKeyFile`, so that escapes, list separators and comments are handled
/// exactly as every other desktop component handles them.
///
/// Its four accessors match `UserActivityCore.KeyFileReading`; the conformance
/// is declared where both modules are visible, because this module must not
/// depend on the core.
///
/// Not thread-safe: use an instance from one thread at a time.
public final class GLibKeyFile {
    private let keyFile: OpaquePointer

    private init(keyFile: OpaquePointer) {
        self.keyFile = keyFile
    }

    deinit {
        g_key_file_free(keyFile)
    }

    /// Parses the file at `path`; nil when it is missing, unreadable or not a
    /// valid key file (the caller decides what a bad file means).
    public static func load(path: String) -> GLibKeyFile? {
        guard let keyFile = g_key_file_new() else { return nil }
        var error: UnsafeMutablePointer<GError>?
        guard g_key_file_load_from_file(keyFile, path, G_KEY_FILE_NONE, &error) != 0 else {
            g_clear_error(&error)
            g_key_file_free(keyFile)
            return nil
        }
        return GLibKeyFile(keyFile: keyFile)
    }

    /// The unlocalized value with GLib's escapes (`\s`, `\n`, …) decoded; nil when absent.
    public func string(group: String, key: String) -> String? {
        var error: UnsafeMutablePointer<GError>?
        guard let value = g_key_file_get_string(keyFile, group, key, &error) else {
            g_clear_error(&error)
            return nil
        }
        defer { g_free(value) }
        return String(cString: value)
    }

    /// A `;`-separated list (`\;` is a literal semicolon); nil when absent.
    public func stringList(group: String, key: String) -> [String]? {
        var length: gsize = 0
        var error: UnsafeMutablePointer<GError>?
        guard let list = g_key_file_get_string_list(keyFile, group, key, &length, &error) else {
            g_clear_error(&error)
            return nil
        }
        defer { g_strfreev(list) }
        return (0..<Int(length)).compactMap { list[$0].map { String(cString: $0) } }
    }

    /// The boolean value; nil both when absent and when not `true`/`false`,
    /// so that a typo never reads as `false` by accident.
    public func boolean(group: String, key: String) -> Bool? {
        var error: UnsafeMutablePointer<GError>?
        let value = g_key_file_get_boolean(keyFile, group, key, &error)
        if error != nil {
            g_clear_error(&error)
            return nil
        }
        return value != 0
    }

    /// Whether the group exists.
    public func hasGroup(_ group: String) -> Bool {
        g_key_file_has_group(keyFile, group) != 0
    }
}
