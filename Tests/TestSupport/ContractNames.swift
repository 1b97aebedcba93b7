// SPDX-License-Identifier: Apache-2.0

/// The D-Bus contract's public names (`dbus/org.example.UserActivity.xml`), spelled
/// out once for every suite that drives the daemon from outside. Literal on
/// purpose: those tests check the daemon against the spec, not against the
/// implementation's own tables (which the in-process suites use).
///
/// Suites add their own fixture apps with `extension UA`.
public enum UA {
    public static let busName = "org.example.UserActivity"
    public static let managerPath = "/org/example/UserActivity"
    public static let managerInterface = "org.example.UserActivity"
    public static let activityInterface = "org.example.UserActivity.Activity"
    public static let activityPathPrefix = "/org/example/UserActivity/activity/"
    public static let searchProviderPath = "/org/example/UserActivity/SearchProvider"
    public static let krunnerPath = "/org/example/UserActivity/KRunner"

    /// `org.example.UserActivity.Error.<name>`.
    public static func error(_ name: String) -> String { "org.example.UserActivity.Error.\(name)" }

    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"

    /// Fixture apps of team `com.example` that several suites install.
    public static let editor = "com.example.Editor"
    public static let editType = "com.example.Editor.edit-document"
    public static let viewer = "com.example.Viewer"
    public static let viewType = "com.example.Viewer.view"
}
