// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import UserActivityCore

/// The command tree. `generate-manpage` walks it for `man/useractivityctl.1`.
struct UserActivityCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "useractivityctl",
        abstract: "Inspect and drive useractivityd: activities, search, suggestions, continuation and privacy.",
        discussion: """
        useractivityctl talks to useractivityd (org.example.UserActivity) on the session bus; D-Bus starts \
        the daemon when it is not running. Read commands print tables; add --json for scripts. D-Bus errors \
        are printed as "useractivityctl: <ErrorName>: <message>" with a non-zero exit status.

        A live activity lasts as long as the connection that created it: become-current keeps running, \
        holding its activity current, until Ctrl-C. Use donate for something that lasts.
        """,
        version: UserActivityVersion.current,
        subcommands: [Status.self, GenerateManPage.self],
        groupedSubcommands: [
            CommandGroup(name: "Live activities", subcommands: [
                Current.self, List.self, Show.self, BecomeCurrent.self, Monitor.self,
            ]),
            CommandGroup(name: "Saved activities", subcommands: [
                Donate.self, Search.self, Suggest.self, Browse.self, Delete.self, DeleteAll.self,
            ]),
            CommandGroup(name: "Continuation", subcommands: [
                Continue.self, ContinueSaved.self,
            ]),
            CommandGroup(name: "Apps", subcommands: [
                Types.self,
            ]),
            CommandGroup(name: "Handoff between devices", subcommands: [
                Handoff.self,
            ]),
            CommandGroup(name: "Privacy", subcommands: [
                Privacy.self, Pause.self, Resume.self, BlockApp.self, UnblockApp.self, BlockType.self,
                UnblockType.self, Retention.self, MaxSaved.self, RecentDocumentsCurrent.self, ForgetApp.self, ForgetRange.self, ForgetAll.self,
            ]),
        ])
}

@main
enum Main {
    static func main() {
        do {
            var command = try UserActivityCtl.parseAsRoot()
            try command.run()
        } catch let failure as CLIError {
            Output.error("useractivityctl: " + failure.text)
            if let hint = failure.hint { Output.error("useractivityctl: " + hint) }
            exit(failure.exitCode)
        } catch {
            UserActivityCtl.exit(withError: error)
        }
    }
}
