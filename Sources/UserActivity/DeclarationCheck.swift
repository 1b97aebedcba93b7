// SPDX-License-Identifier: Apache-2.0
import Foundation
import GLibSupport
internal import UserActivityCore

/// The app's desktop entry does not declare every activity type the app
/// would publish: the service would refuse them (`NotDeclared`). The
/// ``description`` says exactly which line to put where.
///
/// ```text
/// com.example.Editor would publish activity types its desktop entry does not declare:
///   com.example.Editor.show-page
/// The service refuses undeclared types (org.example.UserActivity.Error.NotDeclared).
/// Fix: in /usr/share/applications/com.example.Editor.desktop, under [Desktop Entry], set:
///
///     X-UserActivityTypes=com.example.Editor.open-document;com.example.Editor.show-page;
/// ```
public struct DeclarationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The app whose desktop entry was checked.
    public var appID: String
    /// The types the app would publish that are not declared.
    public var missingTypes: [String]
    /// The desktop entry that was found, nil when none was.
    public var desktopFile: String?
    /// The `applications` directories searched, highest precedence first.
    public var searchedDirectories: [String]
    /// The complete line to put in the desktop entry.
    public var lineToAdd: String
    /// Why the service would ignore some of what the entry declares (team rule, malformed types).
    public var catalogWarnings: [String]

    public var description: String {
        var text: String
        if let desktopFile {
            text = "\(appID) would publish activity types its desktop entry does not declare:\n"
            text += missingTypes.map { "  \($0)\n" }.joined()
            text += "The service refuses undeclared types (org.example.UserActivity.Error.NotDeclared).\n"
            text += "Fix: in \(desktopFile), under [Desktop Entry], set:\n\n    \(lineToAdd)\n"
        } else {
            text = "no desktop entry \(appID).desktop is installed, so \(appID) declares no activity types and the service refuses to publish any (org.example.UserActivity.Error.UnknownApplication).\n"
            text += "Looked in (highest precedence first):\n" + searchedDirectories.map { "  \($0)\n" }.joined()
            let home = searchedDirectories.first ?? "~/.local/share/applications"
            text += "Fix: install \(home)/\(appID).desktop (or one in a system directory) containing:\n\n"
            text += "    [Desktop Entry]\n    Type=Application\n    Name=\(appID)\n    Exec=<your app's command>\n    \(lineToAdd)\n"
        }
        if !catalogWarnings.isEmpty {
            text += "\nThe service also ignores these declarations:\n" + catalogWarnings.map { "  \($0)\n" }.joined()
        }
        return text
    }
}

/// Reads desktop entries with GLib's key-file parser, as the service does.
private struct DesktopEntryFile: KeyFileReading {
    let file: GLibKeyFile
    func string(group: String, key: String) -> String? { file.string(group: group, key: key) }
    func stringList(group: String, key: String) -> [String]? { file.stringList(group: group, key: key) }
    func boolean(group: String, key: String) -> Bool? { file.boolean(group: group, key: key) }
    func hasGroup(_ group: String) -> Bool { file.hasGroup(group) }
}

enum DeclarationCheck {
    /// Throws ``DeclarationError`` unless the app's desktop entry (found in
    /// the XDG data directories of `environment`, with the service's own
    /// catalog code) declares every type in `types`.
    static func check(appID: String, types: [String], environment: [String: String]) throws(DeclarationError) {
        let directories = AppCatalog.applicationDirectories(environment: environment)
        let catalog = AppCatalog.load(applicationDirectories: directories) { path in
            GLibKeyFile.load(path: path).map(DesktopEntryFile.init(file:))
        }
        let warnings = catalog.warnings.filter { $0.contains("'\(appID)'") }
        guard types.contains(where: { !SystemActivityType.isSystem($0) }) else { return }
        guard let app = catalog.app(appID) else {
            throw DeclarationError(appID: appID, missingTypes: types, desktopFile: nil, searchedDirectories: directories,
                                   lineToAdd: line(types), catalogWarnings: warnings)
        }
        let missing = types.filter { !app.declares($0) && !SystemActivityType.isSystem($0) }
        guard !missing.isEmpty else { return }
        // Keep what the entry declares already (in its order), then add what is missing.
        let declared = app.declaredTypes + missing.filter { !app.declaredTypes.contains($0) }
        throw DeclarationError(appID: appID, missingTypes: missing, desktopFile: app.desktopFilePath,
                               searchedDirectories: directories, lineToAdd: line(declared), catalogWarnings: warnings)
    }

    static func line(_ types: [String]) -> String {
        "\(AppCatalog.typesKey)=" + types.map { "\($0);" }.joined()
    }
}
