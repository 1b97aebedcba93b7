// SPDX-License-Identifier: Apache-2.0

/// The daemon's command line: five flags, parsed by hand so the daemon links
/// neither swift-argument-parser nor Foundation (each adds megabytes to the
/// resident size of a process that runs all session long).
struct DaemonOptions: Equatable {
    var replace = false
    var verbose = false
    var printIntrospection = false
    var help = false
    var version = false

    static let usage = "useractivityd [--replace] [--verbose] [--print-introspection]"

    static let helpText = """
        OVERVIEW: Serves org.example.UserActivity on the session bus: activities,
        search, suggestions and continuation.

        Usually started by D-Bus activation or its systemd user unit. Saved activities
        live in $XDG_STATE_HOME/useractivity (default ~/.local/state/useractivity);
        apps declare activity types with X-UserActivityTypes in their desktop entries.

        USAGE: \(usage)

        OPTIONS:
          --replace               Take the bus name over from a running instance.
          -v, --verbose           Log debug messages.
          --print-introspection   Print the documented D-Bus interface XML (as kept in
                                  dbus/) and exit.
          --version               Show the version.
          -h, --help              Show help information.

        """

    struct UsageError: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> DaemonOptions {
        var options = DaemonOptions()
        for argument in arguments {
            switch argument {
            case "--replace": options.replace = true
            case "-v", "--verbose": options.verbose = true
            case "--print-introspection": options.printIntrospection = true
            case "-h", "--help": options.help = true
            case "--version": options.version = true
            default:
                let kind = argument.hasPrefix("-") ? "Unknown option" : "Unexpected argument"
                throw UsageError(description: "\(kind) '\(argument)'")
            }
        }
        return options
    }
}
