// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// XDG base directories the daemon uses.
public enum AppDirectories {
    public static func applicationDirectories(environment: [String: String]) -> [String] {
        AppCatalog.applicationDirectories(environment: environment)
    }

    /// `$XDG_STATE_HOME/useractivity`, default `~/.local/state/useractivity`.
    public static func stateDirectory(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? "/"
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/state"
        return state + "/useractivity"
    }

    /// `$XDG_CONFIG_HOME/useractivity`, default `~/.config/useractivity`.
    public static func configDirectory(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? "/"
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        return config + "/useractivity"
    }

    /// `$XDG_DATA_HOME/recently-used.xbel`, default `~/.local/share/recently-used.xbel`:
    /// where GTK and KIO record the documents apps open.
    public static func recentFilesPath(environment: [String: String]) -> String {
        let home = environment["HOME"] ?? "/"
        let data = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
        return data + "/recently-used.xbel"
    }
}
