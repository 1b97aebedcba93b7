// SPDX-License-Identifier: Apache-2.0

/// Read access to a parsed key file (desktop entries, `.flatpak-info`).
///
/// The core does not parse key files itself: `GLibSupport.GLibKeyFile` reads
/// them with GLib's `GKeyFile`, the desktop ecosystem's own parser, and is
/// injected as a ``KeyFileLoader``.
public protocol KeyFileReading {
    /// The raw (unlocalized) string value, or nil when absent.
    func string(group: String, key: String) -> String?
    /// A `;`-separated list with the format's escaping rules, or nil when absent.
    func stringList(group: String, key: String) -> [String]?
    /// A boolean value, or nil when absent or not a boolean.
    func boolean(group: String, key: String) -> Bool?
    /// Whether the group exists.
    func hasGroup(_ group: String) -> Bool
}

/// Loads the key file at a path; nil when it is missing or not a valid key file.
public typealias KeyFileLoader = @Sendable (_ path: String) -> (any KeyFileReading)?
