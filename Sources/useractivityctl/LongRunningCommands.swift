// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DBusKit
import Foundation
import TypedValues
import UserActivityInterfaces

struct BecomeCurrent: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create an activity, make it current, and keep it until Ctrl-C.",
        discussion: """
        A live activity lasts as long as the bus connection that created it, so this command keeps running \
        and holds its connection: it prints the activity's object path, then waits. Ctrl-C or SIGTERM \
        invalidates the activity and exits 0. It also exits when the activity is invalidated by its app \
        (exit 0) or when the daemon stops (exit 69). To save something without keeping a process, use donate.
        """)

    @OptionGroup var activity: NewActivityArguments
    @OptionGroup var output: OutputOptions

    func run() throws {
        let arguments = try activity.callArguments()
        let client = try ServiceClient()
        Interrupts.install()
        let reply = try client.call("BecomeCurrent", arguments)
        guard let path = reply.first?.objectPathValue else { throw CLIError("BecomeCurrent answered without an object path") }

        let events = SignalQueue()
        try events.attach(to: client.connection)
        try client.addMatch("type='signal',sender='\(Interfaces.busName)',path='\(Interfaces.managerPath)',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesRemoved'")
        try client.addMatch("type='signal',sender='\(Interfaces.busName)',path='\(path)',interface='\("org.freedesktop.DBus.Properties")',member='PropertiesChanged'")
        try client.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Interfaces.busName)'")
        // Reading the activity's property asks the daemon for this activity's
        // signals (and no other's); it also says whether it is still current.
        var isCurrent = (try? client.call(path: path, interface: "org.freedesktop.DBus.Properties", "Get", [.string(Interfaces.activityName), .string("Current")]))?
            .first?.unwrappedVariant.boolValue ?? true

        if output.json { try Output.json(["activity": path]) } else { Output.line(path) }
        Output.error("\(activity.activityType) is current at \(path); it lasts while this command runs. Press Ctrl-C to end it.")

        // A change before the read above may still arrive: only changes from what is known are news.
        while !Interrupts.stopRequested {
            guard client.connection.readWriteDispatch(timeoutMilliseconds: 200) else {
                throw CLIError("the session bus closed; the activity is gone", exitCode: CLIError.unavailable)
            }
            for signal in events.drain() {
                switch signal.member {
                case "InterfacesRemoved" where signal.arguments.first?.objectPathValue == path:
                    Output.error("the activity was invalidated (by its app); exiting")
                    return
                case "NameOwnerChanged" where signal.arguments.count == 3 && signal.arguments[2].stringValue == "":
                    throw CLIError("useractivityd stopped; the activity is gone", exitCode: CLIError.unavailable)
                case "PropertiesChanged" where signal.path == path:
                    if let changed = signal.arguments.dropFirst().first?.stringVariantEntries,
                       let current = changed.first(where: { $0.0 == "Current" })?.1.boolValue, current != isCurrent {
                        isCurrent = current
                        Output.error(current ? "the activity is current again" : "the activity is no longer current (another one became current)")
                    }
                default:
                    break
                }
            }
        }
        // Ending it explicitly (rather than by closing the connection) means
        // every watcher sees it gone before this command has exited.
        _ = try? client.call(path: path, interface: Interfaces.activityName, "Invalidate", timeoutMilliseconds: 2000)
        client.connection.flush()
        Output.error("the activity ended")
    }
}

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow current-activity changes and continuations live, one line per event.",
        discussion: """
        Prints one line per event until Ctrl-C, flushed at once: "<time> current <path> <app-id> <activity-type> <title>", \
        "<time> current none", "<time> continued <path> by <app-id>", "<time> daemon started|stopped". \
        With --json each event is one JSON object per line (time, event, and path, app-id, activity-type, title, by-app-id). \
        A line on stderr says when it is listening.
        """)

    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        Interrupts.install()
        // Start the daemon (D-Bus activation) so that there is something to
        // follow; before the match rules, so that its own start is not an
        // event. The daemon sends its activity signals only to connections
        // that subscribed.
        _ = try client.call("Subscribe")
        let events = SignalQueue()
        try events.attach(to: client.connection)
        try client.addMatch("type='signal',sender='\(Interfaces.busName)',path='\(Interfaces.managerPath)',interface='\("org.freedesktop.DBus.Properties")',member='PropertiesChanged'")
        try client.addMatch("type='signal',sender='\(Interfaces.busName)',interface='\(Interfaces.activityName)',member='Continued'")
        try client.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Interfaces.busName)'")
        Output.error("following \(Interfaces.busName): current activity and continuations (Ctrl-C to stop)")

        while !Interrupts.stopRequested {
            guard client.connection.readWriteDispatch(timeoutMilliseconds: 200) else {
                throw CLIError("the session bus closed", exitCode: CLIError.unavailable)
            }
            for signal in events.drain() {
                try report(signal, client: client)
            }
        }
    }

    private func report(_ signal: ReceivedSignal, client: ServiceClient) throws {
        let time = ISO8601DateFormatter().string(from: Date())
        var fields: [String: String] = [:]
        var words: [String] = []
        switch signal.member {
        case "PropertiesChanged":
            guard signal.arguments.first?.stringValue == Interfaces.managerName,
                  let changed = signal.arguments.dropFirst().first?.stringVariantEntries,
                  let path = changed.first(where: { $0.0 == "CurrentActivity" })?.1.objectPathValue
            else { return }
            if path == "/" {
                fields = ["event": "current", "path": "/"]
                words = ["current", "none"]
            } else {
                // The activity may already be gone again; its path is still worth a line.
                let properties = Dictionary((try? client.activityProperties(path)) ?? [], uniquingKeysWith: { _, last in last })
                let app = properties["AppId"]?.plainText ?? ""
                let type = properties["ActivityType"]?.plainText ?? ""
                let title = properties["Title"]?.plainText ?? ""
                fields = ["event": "current", "path": path, "app-id": app, "activity-type": type, "title": title]
                words = ["current", path, app, type, "\"" + title.replacingOccurrences(of: "\"", with: "\\\"") + "\""]
            }
        case "Continued":
            let app = signal.arguments.first?.stringValue ?? ""
            fields = ["event": "continued", "path": signal.path, "by-app-id": app]
            words = ["continued", signal.path, "by", app]
        case "NameOwnerChanged":
            guard signal.arguments.count == 3 else { return }
            let state = signal.arguments[2].stringValue?.isEmpty == false ? "started" : "stopped"
            // A new daemon knows no subscriber yet: subscribe again.
            if state == "started" { _ = try? client.call("Subscribe") }
            fields = ["event": "daemon", "state": state]
            words = ["daemon", state]
        default:
            return
        }
        if output.json {
            fields["time"] = time
            try Output.jsonLine(fields)
        } else {
            Output.line(([time] + words).joined(separator: " "))
        }
    }
}

/// A signal, read out of libdbus's callback to be handled outside it.
struct ReceivedSignal {
    var path: String
    var interface: String
    var member: String
    var arguments: [TypedValue]
}

/// Collects signals from a connection's filter; handling them inside the
/// filter would mean making D-Bus calls from within libdbus's dispatch.
final class SignalQueue: @unchecked Sendable {
    private var queued: [ReceivedSignal] = []

    func attach(to connection: Connection) throws(CLIError) {
        do {
            try connection.addFilter { [self] message in
                if message.kind == .signal, let path = message.path, let interface = message.interface, let member = message.member {
                    queued.append(ReceivedSignal(path: path, interface: interface, member: member,
                                                 arguments: (try? message.arguments()) ?? []))
                }
                return false
            }
        } catch {
            throw CLIError(error)
        }
    }

    func drain() -> [ReceivedSignal] {
        defer { queued.removeAll() }
        return queued
    }
}
