// SPDX-License-Identifier: Apache-2.0
import CDBus
import DBusKit
import GLibSupport

/// Calls to the bus (`GetId`) sent in batches of 100 in flight on a
/// connection driven by a GLib loop through `DBusMainLoopBridge`, their
/// replies awaited either by `ReplyTable` (`Connection.callAsync`) or by
/// libdbus's pending calls (`dbus_connection_send_with_reply`). Run on a
/// private bus by `bench/callgrind-libcompare.sh`.
enum ReplyBench {
    static let usage = "useractivity-bench --replies table|pending COUNT (on a bus: dbus-run-session)"
    static let inFlight = 100

    /// DBusKit keeps libdbus's handles to itself; a measurement of libdbus's
    /// own way needs them, and reflection reads them without widening the API.
    private static func handle(of object: AnyObject) -> OpaquePointer? {
        Mirror(reflecting: object).children.first { $0.label == "pointer" }?.value as? OpaquePointer
    }

    private final class Done {
        var count = 0
        var failures = 0
    }

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let count = Int(arguments[1]), count >= 0, count % inFlight == 0,
              arguments[0] == "table" || arguments[0] == "pending" else {
            note(usage + " (COUNT a multiple of \(inFlight))")
            return 2
        }
        do {
            let loop = MainLoop.withNewContext()
            let connection = try Connection.session()
            try DBusMainLoopBridge.attach(connection, to: loop)
            guard let raw = handle(of: connection) else {
                note("useractivity-bench --replies: no libdbus handle in Connection")
                return 1
            }
            let done = Done()
            for batch in 0..<(count / inFlight) {
                for _ in 0..<inFlight {
                    let call = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                  interface: "org.freedesktop.DBus", member: "GetId")
                    if arguments[0] == "table" {
                        connection.callAsync(call, timeoutMilliseconds: 25_000) { result in
                            done.count += 1
                            if case .failure = result { done.failures += 1 }
                        }
                    } else {
                        var pending: OpaquePointer?
                        guard let message = handle(of: call),
                              dbus_connection_send_with_reply(raw, message, &pending, 25_000) != 0, let pending else {
                            note("useractivity-bench --replies: dbus_connection_send_with_reply failed")
                            return 1
                        }
                        let box = Unmanaged.passUnretained(done).toOpaque()
                        dbus_pending_call_set_notify(pending, { pendingCall, data in
                            let done = Unmanaged<Done>.fromOpaque(data!).takeUnretainedValue()
                            done.count += 1
                            if let reply = dbus_pending_call_steal_reply(pendingCall) {
                                if dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_ERROR { done.failures += 1 }
                                dbus_message_unref(reply)
                            } else {
                                done.failures += 1
                            }
                        }, box, nil)
                        dbus_pending_call_unref(pending)
                    }
                }
                while done.count < (batch + 1) * inFlight { loop.iterate(mayBlock: true) }
            }
            guard done.failures == 0 else {
                note("useractivity-bench --replies: \(done.failures) of \(count) calls failed")
                return 1
            }
        } catch {
            note("useractivity-bench --replies: \(error)")
            return 1
        }
        return 0
    }
}
