// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import TypedValues
import UserActivityCore

/// One incoming method call: its decoded arguments and the way to answer it,
/// now or later (the reply may wait for the caller's identity or for an app).
final class Invocation {
    let message: Message
    let arguments: [TypedValue]
    let sender: String
    /// The live activity addressed, for calls on activity objects.
    let activityID: String?
    private let bus: Connection
    private(set) var isAnswered = false
    /// A reply built ahead of time by ``prepareReply(_:)``, and what it says.
    private var preparedReply: (values: [TypedValue], message: Message)?

    /// `sender` is `message.sender`, already read by the router.
    init(message: Message, sender: String, arguments: [TypedValue], activityID: String?, bus: Connection) {
        self.message = message
        self.arguments = arguments
        self.sender = sender
        self.activityID = activityID
        self.bus = bus
    }

    func string(_ index: Int) -> String { arguments[index].stringValue ?? "" }
    func entries(_ index: Int) -> [(String, TypedValue)] { arguments[index].stringVariantEntries ?? [] }

    /// Builds the reply `values` would give now, for a call whose answer
    /// waits on something else (an app): the work is done while the daemon
    /// waits, and ``reply(_:)`` with the same values only has to send it.
    func prepareReply(_ values: [TypedValue]) {
        guard !isAnswered, message.expectsReply, let reply = try? Message.methodReturn(to: message, values) else { return }
        preparedReply = (values, reply)
    }

    func reply(_ values: [TypedValue] = []) {
        guard !isAnswered else { return }
        isAnswered = true
        guard message.expectsReply else { return }
        if let prepared = preparedReply, prepared.values == values {
            preparedReply = nil
            bus.send(prepared.message)
            return
        }
        preparedReply = nil
        do {
            bus.send(try Message.methodReturn(to: message, values))
        } catch {
            bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.Failed",
                                   message: "the reply could not be built: \(error)"))
        }
    }

    func fail(_ error: Error) {
        if let error = error as? UserActivityError {
            fail(name: ErrorNames.name(for: error.kind), message: error.message)
        } else if let error = error as? DBusFailure {
            fail(name: error.name, message: error.message)
        } else {
            fail(name: "org.freedesktop.DBus.Error.Failed", message: "\(error)")
        }
    }

    func fail(name: String, message text: String) {
        guard !isAnswered else { return }
        isAnswered = true
        preparedReply = nil
        guard message.expectsReply else { return }
        bus.send(Message.error(to: message, name: name, message: text))
    }
}
