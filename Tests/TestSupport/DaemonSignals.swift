// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
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
    /// The daemon sends its signals only to connections that asked for them,
    /// so the connection calls the manager's `Subscribe` before it is returned.
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
            destination: UA.busName, path: UA.managerPath, interface: UA.managerInterface, member: "Subscribe", arguments: []))
        return connection
    }
}

/// A connection of its own that records the daemon's signals matching its
/// rules while the test pumps it (``wait(timeout:until:)``, ``drain(for:)``),
/// on the test's thread.
public final class SignalMonitor: @unchecked Sendable {
    private final class Store: @unchecked Sendable {
        var signals: [DaemonSignal] = []
    }

    public let connection: Connection
    private let store = Store()

    public init(address: String, rules: [String]) throws {
        let store = self.store
        connection = try DaemonSignal.listen(address: address, rules: rules) { store.signals.append($0) }
    }

    deinit { connection.close() }

    /// What has been recorded so far, in the order the bus delivered it.
    public var signals: [DaemonSignal] { store.signals }

    /// Dispatches incoming messages until `predicate` holds or `timeout` passes.
    @discardableResult
    public func wait(timeout: Double, until predicate: ([DaemonSignal]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if predicate(store.signals) { return true }
            if Date() >= deadline { return false }
            connection.readWriteDispatch(timeoutMilliseconds: 20)
        }
    }

    /// Dispatches whatever arrives during `seconds`.
    public func drain(for seconds: Double) {
        _ = wait(timeout: seconds) { _ in false }
    }
}
