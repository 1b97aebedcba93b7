// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TypedValues
import UserActivityInterfaces

/// A failure the command reports on stderr as `useractivityctl: <text>`,
/// followed by an optional hint line, and exits with ``exitCode``.
struct CLIError: Error, CustomStringConvertible {
    /// `sysexits.h`: the service (bus or daemon) is unavailable.
    static let unavailable: Int32 = 69

    var text: String
    var hint: String?
    var exitCode: Int32 = 1

    init(_ text: String, hint: String? = nil, exitCode: Int32 = 1) {
        self.text = text
        self.hint = hint
        self.exitCode = exitCode
    }

    var description: String { text }

    /// A D-Bus failure as `<ErrorName>: <message>`, with advice for the
    /// failures a user can do something about.
    init(_ failure: DBusFailure) {
        let name = failure.name
        let message = failure.message.isEmpty ? "(no message)" : failure.message
        self.init("\(name): \(message)")
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.Spawn.ServiceNotFound",
             "org.freedesktop.DBus.Error.Spawn.ExecFailed", "org.freedesktop.DBus.Error.Spawn.ChildExited",
             "org.freedesktop.DBus.Error.NameHasNoOwner":
            hint = """
            useractivityd is not running and D-Bus could not start it. Start it by hand (`useractivityd &`), \
            or install its activation file: copy dbus/\(Interfaces.busName).service to ~/.local/share/dbus-1/services/ \
            with Exec= set to the path of useractivityd.
            """
            exitCode = CLIError.unavailable
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
             "org.freedesktop.DBus.Error.TimedOut":
            hint = "the daemon did not answer in time; check its log (journalctl --user -u useractivityd, or its stderr)."
            exitCode = CLIError.unavailable
        case "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer",
             "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.DBus.Error.NoSocket",
             "org.freedesktop.DBus.Error.BadAddress":
            hint = "the session bus at DBUS_SESSION_BUS_ADDRESS cannot be reached; run this inside your desktop session."
            exitCode = CLIError.unavailable
        case ErrorNames.name(for: .unknownApplication):
            hint = "name an installed app with --app-id (its desktop entry declares activity types in X-UserActivityTypes); `useractivityctl types` lists them."
        case ErrorNames.name(for: .notDeclared):
            hint = "`useractivityctl types` shows which app declares which activity types."
        default:
            break
        }
    }
}

/// One connection to the session bus and the calls the commands make.
///
/// Every call may start the daemon through D-Bus activation (the bus's
/// default), except where a command asks otherwise (`status` reports, it
/// does not start anything).
final class ServiceClient {
    let connection: Connection

    /// Connects to the session bus, with a helpful error when there is none.
    init() throws(CLIError) {
        let environment = ProcessInfo.processInfo.environment
        let address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        if address.isEmpty {
            // libdbus would also try $XDG_RUNTIME_DIR/bus (a systemd user
            // bus), then X11 autolaunch; only the first is worth trying.
            let runtimeBus = (environment["XDG_RUNTIME_DIR"] ?? "").isEmpty ? nil : environment["XDG_RUNTIME_DIR"]! + "/bus"
            if runtimeBus.map({ !Self.isSocket($0) }) ?? true {
                throw CLIError(
                    "no session bus: DBUS_SESSION_BUS_ADDRESS is not set\(runtimeBus.map { " and there is no \($0)" } ?? "")",
                    hint: "run useractivityctl inside your desktop session, or start a session bus for testing: `dbus-run-session -- sh`, then `useractivityd &` in it.",
                    exitCode: CLIError.unavailable)
            }
        }
        do {
            connection = try Connection.session()
        } catch {
            var failure = CLIError(error)
            failure.text = "cannot connect to the session bus: " + failure.text
            failure.hint = failure.hint ?? "check DBUS_SESSION_BUS_ADDRESS (\(address.isEmpty ? "unset" : address))."
            failure.exitCode = CLIError.unavailable
            throw failure
        }
    }

    private static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    /// Calls a method and returns the reply's arguments.
    @discardableResult
    func call(destination: String = Interfaces.busName, path: String = Interfaces.managerPath, interface: String = Interfaces.managerName,
              _ member: String, _ arguments: [TypedValue] = [], autoStart: Bool = true,
              timeoutMilliseconds: Int32 = 25_000) throws(CLIError) -> [TypedValue] {
        let message = Message.methodCall(destination: destination, path: path, interface: interface, member: member)
        message.allowsAutoStart = autoStart
        do {
            try message.append(arguments)
            // Anyone on the bus could answer first with the call's serial: the
            // reply must come from the name's owner.
            return try connection.call(message, timeoutMilliseconds: timeoutMilliseconds,
                                       replyMustComeFromOwner: true).arguments()
        } catch {
            throw CLIError(error)
        }
    }

    /// A manager property (the content of the variant).
    func managerProperty(_ name: String, autoStart: Bool = true) throws(CLIError) -> TypedValue {
        let reply = try call(interface: "org.freedesktop.DBus.Properties", "Get", [.string(Interfaces.managerName), .string(name)], autoStart: autoStart)
        return reply.first?.unwrappedVariant ?? .string("")
    }

    func setManagerProperty(_ name: String, _ value: TypedValue) throws(CLIError) {
        try call(interface: "org.freedesktop.DBus.Properties", "Set", [.string(Interfaces.managerName), .string(name), .variant(value)])
    }

    /// All properties of a live activity, in the daemon's order.
    func activityProperties(_ path: String) throws(CLIError) -> [(String, TypedValue)] {
        let reply = try call(path: path, interface: "org.freedesktop.DBus.Properties", "GetAll", [.string(Interfaces.activityName)])
        return reply.first?.stringVariantEntries ?? []
    }

    /// A call to the bus daemon itself (never starts anything).
    @discardableResult
    func busDaemon(_ member: String, _ arguments: [TypedValue] = []) throws(CLIError) -> [TypedValue] {
        try call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                 member, arguments, autoStart: false, timeoutMilliseconds: 5000)
    }

    func addMatch(_ rule: String) throws(CLIError) {
        do { try connection.addMatch(rule) } catch { throw CLIError(error) }
    }
}

/// `/org/example/UserActivity/activity/3` for `3`, a path as given.
func activityPath(_ pathOrID: String) throws(CLIError) -> String {
    if pathOrID.hasPrefix("/") {
        guard pathOrID.hasPrefix(Interfaces.activityPathPrefix) else {
            throw CLIError("\(pathOrID) is not a live activity's path (they are \(Interfaces.activityPathPrefix)<id>)")
        }
        return pathOrID
    }
    guard !pathOrID.isEmpty, pathOrID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
        throw CLIError("'\(pathOrID)' is neither an activity path nor an activity id (the last part of its path, as `useractivityctl list` shows)")
    }
    return Interfaces.activityPathPrefix + pathOrID
}
