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
}
