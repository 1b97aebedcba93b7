// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

typealias Stack = HandoffStack

/// Two stacks, both enabled, B discoverable; `link()` adds B as a peer of A.
final class TwoStacks: @unchecked Sendable {
    let a: Stack
    let b: Stack

    /// The address A dials B at (B's end of the link).
    let hostOfB: String

    init(appsA: [(id: String, types: [String])] = [], appsB: [(id: String, types: [String])] = [], fakeScreenSaverA: Bool = false,
         fakeLogindA: Bool = false, keepaliveSeconds: Int = 15, placementB: Stack.Placement? = nil, veth: VethLink? = nil,
         handoffEnvironment: [String: String] = [:]) throws {
        a = try Stack("A", apps: appsA, fakeScreenSaver: fakeScreenSaverA, fakeLogind: fakeLogindA, keepaliveSeconds: keepaliveSeconds,
                      placement: veth?.placement(0), extraEnvironment: handoffEnvironment)
        b = try Stack("B", apps: appsB, keepaliveSeconds: keepaliveSeconds, placement: placementB ?? veth?.placement(1),
                      extraEnvironment: handoffEnvironment)
        hostOfB = veth?.addresses[1] ?? "127.0.0.1"
        try a.set("DeviceName", .string("Stack A"))
        try b.set("DeviceName", .string("Stack B"))
        try a.set("Enabled", .boolean(true))
        try b.set("Enabled", .boolean(true))
    }

    /// A adds B (discoverable) with AddPeer; returns B's device path on A.
    func link() throws -> String {
        try b.set("Discoverable", .boolean(true))
        guard let path = try a.handoff("AddPeer", [.string("\(hostOfB):\(b.port)")]).first?.objectPathValue else {
            throw HandoffTestFailure("AddPeer returned no path")
        }
        return path
    }

    /// Links and pairs with accepting agents on both sides.
    func pair() throws -> (onA: String, onB: String) {
        _ = try a.startAgent(accept: true)
        _ = try b.startAgent(accept: true)
        let path = try link()
        _ = try a.call(HO.busName, path, HO.device, "Pair")
        let onB = b.devicePath(of: a)
        guard b.waitForDevice(onB, "Paired", { $0 == .boolean(true) }) else { throw HandoffTestFailure("B never saw A paired") }
        return (path, onB)
    }

    var logs: String { "--- A handoffd ---\n\(a.handoffLog.suffix(4000))\n--- B handoffd ---\n\(b.handoffLog.suffix(4000))" }
}

/// A blocking call on a thread of its own, so the test can act while the call
/// waits. ``value`` stays nil until the call returns, then is `ok` or what
/// ``dbusErrorName(_:)`` makes of its error.
final class BackgroundCall: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: String?

    var value: String? { lock.withLock { stored } }

    init(_ call: @escaping @Sendable () throws -> Void) {
        Thread { [self] in
            let outcome = dbusErrorName(call) ?? "ok"
            lock.withLock { stored = outcome }
        }.start()
    }
}

extension HandoffStack {
    /// Calls handoffd from a connection of its own, on a thread of its own
    /// (60 s limit), so the test can act while the call waits.
    func callInBackground(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = []) throws -> BackgroundCall {
        let caller = try Connection.bus(address: bus.address)
        return BackgroundCall {
            defer { caller.close() }
            _ = try caller.call(try Message.methodCall(destination: HO.busName, path: path, interface: interface, member: member, arguments: arguments),
                                timeoutMilliseconds: 60_000)
        }
    }
}
