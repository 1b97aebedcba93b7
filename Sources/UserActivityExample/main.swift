// SPDX-License-Identifier: Apache-2.0
import Foundation

// UserActivityExample: the UserActivity library end to end, headless.
//
//   UserActivityExample            publish two activities, search them, continue one into itself, exit
//   UserActivityExample --serve    the same, then keep handling continuations until killed
//   UserActivityExample --handle-continuations
//                                  only handle continuations (the desktop entry's Exec: how
//                                  the service launches the app to continue one of its activities)
//   UserActivityExample --open PATH [--page N]
//                                  open one document (the current activity, offered to paired
//                                  devices by Handoff) and handle continuations until killed
//   --address ADDRESS              a bus other than $DBUS_SESSION_BUS_ADDRESS
//
// The desktop entry desktop/share/applications/com.example.UserActivityExample.desktop
// must be installed (or its directory be in XDG_DATA_DIRS, as scripts/run-dev.sh does).

var arguments = Array(CommandLine.arguments.dropFirst())
var options = Example.Options()
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--serve": options.serve = true
    case "--handle-continuations": options.handleContinuationsOnly = true
    case "--open":
        guard let path = arguments.first, !path.isEmpty else {
            Output.error("--open needs a document path")
            exit(64)
        }
        arguments.removeFirst()
        options.document = path
    case "--page":
        guard let text = arguments.first, let page = Int(text), page > 0 else {
            Output.error("--page needs a page number (1 or more)")
            exit(64)
        }
        arguments.removeFirst()
        options.page = page
    case "--address":
        guard let address = arguments.first else {
            Output.error("--address needs a bus address")
            exit(64)
        }
        arguments.removeFirst()
        options.address = address
    case "-h", "--help":
        Output.line("""
            usage: UserActivityExample [--serve | --handle-continuations | --open PATH [--page N]] [--address ADDRESS]
              Publishes com.example.UserActivityExample activities, searches them, and continues one
              into itself through the user-activity service. --serve keeps handling continuations.
              --handle-continuations only handles continuations (the desktop entry's Exec).
              --open opens one document at a page (1 unless given): its activity is current and
              eligible for Handoff, so a paired machine offers to continue it there.
              All three exit when the session bus goes away.
            """)
        exit(0)
    default:
        Output.error("unknown argument '\(argument)' (try --help)")
        exit(64)
    }
}

if options.page != nil && options.document == nil {
    Output.error("--page goes with --open PATH")
    exit(64)
}
exit(await Example.run(options))
