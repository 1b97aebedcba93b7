// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TypedValues

/// One signal received from the daemon.
public struct DaemonSignal: Sendable {
    public let path: String
    public let interface: String
    public let member: String
    public let arguments: [TypedValue]

    /// For PropertiesChanged: the interface and its changed properties.
    public var changedProperties: (interface: String, changed: [String: TypedValue])? {
        guard member == "PropertiesChanged", arguments.count >= 2,
              let interface = arguments[0].stringValue, let entries = arguments[1].stringVariantEntries
        else { return nil }
        return (interface, Dictionary(entries, uniquingKeysWith: { _, last in last }))
    }

    /// A match rule for the daemon's signals on `interface`, narrowed to
    /// `path` and `member` when given.
    public static func rule(path: String? = nil, interface: String, member: String? = nil) -> String {
        var rule = "type='signal',sender='\(UA.busName)',interface='\(interface)'"
        if let path { rule += ",path='\(path)'" }
        if let member { rule += ",member='\(member)'" }
        return rule
    }

    /// A new connection to the bus at `address` that hands each signal
    /// matching `rules` to `record` while it is dispatched.
    ///
    /// The daemon sends its signals only to connections that have called it,
    /// so the connection reads the manager's `Version` before it is returned.
    public static func listen(address: String, rules: [String],
                              record: @escaping (DaemonSignal) -> Void) throws -> Connection {
        let connection = try Connection.bus(address: address)
        try connection.addFilter { message in
            if message.kind == .signal, let path = message.path, let interface = message.interface,
               let member = message.member {
                record(DaemonSignal(path: path, interface: interface, member: member,
                                    arguments: (try? message.arguments()) ?? []))
            }
            return false
        }
        for rule in rules { try connection.addMatch(rule) }
        _ = try connection.call(try Message.methodCall(
            destination: UA.busName, path: UA.managerPath, interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(UA.managerInterface), .string("Version")]))
        return connection
    }
}
