// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import GtkSupport
import TypedValues

/// The app's one bus connection, driven by GTK's own GLib main loop (the
/// default context): every call is asynchronous and every reply and signal
/// arrives on the UI thread between frames.
final class ServiceLink {
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"

    let bus: Connection
    let loop: MainLoop
    /// The unique name owning each well-known name the app follows; a signal
    /// counts only from it (the services send theirs as unicast, which no
    /// match rule filters, so anyone could otherwise send one).
    private var owners: [String: String] = [:]
    private var signalHandlers: [(service: String, handler: (Message) -> Void)] = []
    private var ownerHandlers: [String: [(Bool) -> Void]] = [:]

    init() throws {
        loop = MainLoop()
        bus = try Connection.session()
        try DBusMainLoopBridge.attach(bus, to: loop)
        try bus.addFilter { [weak self] message in
            self?.route(message)
            return false
        }
        follow(Connection.busDriverName)
    }

    /// Calls a method; `done` runs on the UI thread with the reply's arguments.
    /// A call to a service that is not running starts it (D-Bus activation);
    /// when it cannot be started the bus answers with an error at once.
    func call(_ service: String, _ path: String, _ interface: String, _ member: String,
              _ arguments: [TypedValue] = [], timeoutMilliseconds: Int32 = 25_000,
              _ done: @escaping (Result<[TypedValue], DBusFailure>) -> Void) {
        let message: Message
        do {
            message = try Message.methodCall(destination: service, path: path, interface: interface,
                                             member: member, arguments: arguments)
        } catch {
            done(.failure(error))
            return
        }
        bus.callAsync(message, timeoutMilliseconds: timeoutMilliseconds,
                      acceptingReplyFrom: { [weak self] sender in
                          // Until the owner is known (the first call starts the service) any reply to our serial is taken.
                          guard let owner = self?.owners[service] else { return true }
                          return owner == sender
                      }) { result in
            done(result.flatMap { reply in
                do throws(DBusFailure) { return .success(try reply.argumentsClosingFileDescriptors()) } catch { return .failure(error) }
            })
        }
    }

    func getAll(_ service: String, _ path: String, _ interface: String,
                _ done: @escaping (Result<[String: TypedValue], DBusFailure>) -> Void) {
        call(service, path, Self.propertiesInterface, "GetAll", [.string(interface)]) { result in
            done(result.map { values in
                Dictionary((values.first?.stringVariantEntries ?? []).map { ($0.0, $0.1.unwrappedVariant) },
                           uniquingKeysWith: { $1 })
            })
        }
    }

    func set(_ service: String, _ path: String, _ interface: String, _ property: String, _ value: TypedValue,
             _ done: @escaping (DBusFailure?) -> Void) {
        call(service, path, Self.propertiesInterface, "Set", [.string(interface), .string(property), .variant(value)]) { result in
            if case .failure(let failure) = result { done(failure) } else { done(nil) }
        }
    }

    /// Routes the signals `service` sends to `handler`, and tells
    /// `ownerChanged` when the service starts (true) or goes away (false).
    func follow(_ service: String, signals handler: ((Message) -> Void)? = nil,
                ownerChanged: ((Bool) -> Void)? = nil) {
        if let handler { signalHandlers.append((service, handler)) }
        if let ownerChanged { ownerHandlers[service, default: []].append(ownerChanged) }
        guard service != Connection.busDriverName else {
            owners[service] = service
            return
        }
        let rules = [
            "type='signal',sender='\(service)'",
            "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(service)'",
        ]
        for rule in rules {
            call(Connection.busDriverName, "/org/freedesktop/DBus", Connection.busDriverName, "AddMatch", [.string(rule)]) { _ in }
        }
        call(Connection.busDriverName, "/org/freedesktop/DBus", Connection.busDriverName, "GetNameOwner", [.string(service)]) { [weak self] result in
            if case .success(let values) = result, let owner = values.first?.stringValue, self?.owners[service] == nil {
                self?.owners[service] = owner
            }
        }
    }

    /// Whether `sender` is the connection that owns `service` now.
    func isOwner(_ sender: String?, of service: String) -> Bool {
        sender != nil && owners[service] == sender
    }

    private func route(_ message: Message) {
        guard message.kind == .signal, let sender = message.sender else { return }
        if sender == Connection.busDriverName, message.member == "NameOwnerChanged",
           let values = try? message.arguments(), values.count == 3,
           let name = values[0].stringValue, let newOwner = values[2].stringValue {
            owners[name] = newOwner.isEmpty ? nil : newOwner
            for handler in ownerHandlers[name] ?? [] { handler(!newOwner.isEmpty) }
            return
        }
        for (service, handler) in signalHandlers where owners[service] == sender {
            handler(message)
        }
    }
}

extension Message {
    /// For `PropertiesChanged`: the interface and the changed values.
    var changedProperties: (interface: String, values: [String: TypedValue], invalidated: [String])? {
        guard interface == ServiceLink.propertiesInterface, member == "PropertiesChanged",
              let values = try? argumentsClosingFileDescriptors(), values.count == 3,
              let name = values[0].stringValue, let entries = values[1].stringVariantEntries else { return nil }
        return (name, Dictionary(entries.map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { $1 }),
                values[2].stringArrayValue ?? [])
    }
}

extension DBusFailure {
    /// What a person reads: the service's own message, or what the bus said
    /// when the service could not be reached at all.
    var explanation: String {
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return localized("The service is not installed or could not be started.")
        case let spawn where spawn.hasPrefix("org.freedesktop.DBus.Error.Spawn"):
            return localized("The service could not be started:") + " " + message
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.TimedOut":
            return localized("The service did not answer in time.")
        case "org.freedesktop.DBus.Error.Disconnected":
            return localized("The connection to the session bus was lost.")
        default:
            return message.isEmpty ? name : message
        }
    }
}
