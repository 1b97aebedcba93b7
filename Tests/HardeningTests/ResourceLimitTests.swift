// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
import UserActivityCore

/// The service's resource limits, each reached on purpose: the caller gets
/// the documented error, and everyone else is still served.
///
/// Limits that take thousands of objects to reach are tested in-process with
/// small configured values (`ActivityLimits`); the per-connection limit of
/// 256 at its default value is in EndToEndTests/LimitsTests, the continuation
/// limits at their defaults are tested here against the built daemon.
@Suite("Resource limits")
struct ResourceLimitTests {
    static func small() -> ActivityLimits {
        var limits = ActivityLimits()
        limits.maximumLiveActivitiesPerConnection = 5
        limits.maximumLiveActivities = 12
        limits.maximumPendingContinuationsPerConnection = 4
        limits.maximumPendingContinuations = 10
        return limits
    }

    @Test("Live activities: per connection, then session-wide; closing a connection frees its share")
    func liveActivityLimits() throws {
        let harness = try InProcessService(limits: Self.small())
        let limitExceeded = UA.error(.limitExceeded)
        let first = try harness.client()
        for _ in 0..<5 { _ = try first.create() }
        #expect(dbusErrorName { _ = try first.create() } == limitExceeded, "the 6th of one connection")
        #expect(dbusErrorName { _ = try first.create(becomeCurrent: true) } == limitExceeded)

        let second = try harness.client()
        for _ in 0..<5 { _ = try second.create(UA.viewType, app: UA.viewer) }
        let third = try harness.client()
        _ = try third.create(UA.playType, app: UA.player)
        _ = try third.create(UA.playType, app: UA.player)
        // 12 in the session: the cap, whoever asks.
        let fourth = try harness.client()
        #expect(dbusErrorName { _ = try fourth.create() } == limitExceeded, "the 13th in the session")
        #expect(dbusErrorName { _ = try third.create(UA.playType, app: UA.player) } == limitExceeded)
        // Reads and saving still work at the cap.
        #expect(fourth.ping() != nil)
        _ = try fourth.donate(app: UA.editor, [("title", .string("at the cap"))])

        first.close()
        #expect(waitUntil(timeout: 30) { (try? fourth.create()) != nil }, "a closed connection's activities no longer count")
    }

    @Test("Pending continuations: per connection and session-wide (in-process, small limits)")
    func pendingContinuationLimits() throws {
        let harness = try InProcessService(limits: Self.small())
        let clients = try (0..<4).map { _ in try harness.client() }
        // Each waits for the editor to register a handler after being launched (it never will).
        func startWaiting(_ client: BusClient, _ count: Int) throws {
            for _ in 0..<count { try Self.sendContinuation(client, timeoutMilliseconds: 60_000) }
            _ = try client.call(UA.managerPath, UA.properties, "GetAll", [.string(UA.manager)]) // in order: all were handled
        }
        try startWaiting(clients[0], 4)
        #expect(Self.continueNow(clients[0]) == UA.error(.limitExceeded), "the 5th of one connection")
        try startWaiting(clients[1], 4)
        try startWaiting(clients[2], 2)
        #expect(Self.continueNow(clients[3]) == UA.error(.limitExceeded), "the 11th in the session")
        // Other calls are still served.
        _ = try clients[3].create(becomeCurrent: true)
        // The caller leaving drops its continuations (they had not reached an app).
        clients[0].close()
        #expect(waitUntil(timeout: 30) { Self.continueNow(clients[3], timeoutMilliseconds: 50) == UA.error(.remoteApplicationTimedOut) })
    }

    @Test("Pending continuations at the defaults against the built daemon: 64 per connection, 1024 in the session")
    func pendingContinuationDefaults() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let limits = ActivityLimits.standard
        let perConnection = limits.maximumPendingContinuationsPerConnection
        let connections = limits.maximumPendingContinuations / perConnection
        var clients: [BusClient] = []
        for _ in 0..<connections {
            let client = try daemon.connect()
            for _ in 0..<perConnection { try Self.sendContinuation(client, timeoutMilliseconds: 120_000) }
            clients.append(client)
        }
        // Each connection's calls are handled in order: one more is over its own limit.
        for client in clients {
            #expect(Self.continueNow(client) == UA.error(.limitExceeded))
        }
        let late = try daemon.connect()
        #expect(Self.continueNow(late) == UA.error(.limitExceeded), "the session holds \(limits.maximumPendingContinuations)")
        #expect(late.ping() != nil)
        _ = try late.create(becomeCurrent: true)
        #expect(try daemon.daemonPID() == pid)
        clients.removeAll()
        #expect(waitUntil(timeout: 30) { Self.continueNow(late, timeoutMilliseconds: 50) == UA.error(.remoteApplicationTimedOut) },
                "closing the connections ends their continuations")
    }

    /// ContinueActivity for the editor's type, without waiting for the answer.
    static func sendContinuation(_ client: BusClient, timeoutMilliseconds: UInt32) throws {
        let message = Message.methodCall(destination: UA.busName, path: UA.managerPath, interface: UA.manager, member: "ContinueActivity")
        try message.append([.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]),
                            .stringVariantDictionary([("timeout-ms", .uint32(timeoutMilliseconds))])])
        client.connection.send(message)
    }

    /// The error name of a ContinueActivity that should fail fast (nil on success).
    static func continueNow(_ client: BusClient, timeoutMilliseconds: UInt32 = 60_000) -> String? {
        client.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
            .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]),
            .stringVariantDictionary([("timeout-ms", .uint32(timeoutMilliseconds))]),
        ], timeoutMilliseconds: 5000).errorName
    }

    @Test("Saved-entry size: Donate refuses what CreateActivity refuses, at exactly the limits")
    func savedEntrySize() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        _ = try client.manager("RegisterApplication", [.string(UA.editor)])
        let limits = ActivityLimits.standard

        /// A user-info whose marshalled size is exactly `size`.
        func userInfo(marshalledSize size: Int) -> TypedValue {
            let empty = TypedValue.stringVariantDictionary([("blob", .string(""))]).marshalledSize
            return .stringVariantDictionary([("blob", .string(String(repeating: "u", count: size - empty)))])
        }
        func donate(_ entries: [(String, TypedValue)]) -> String? {
            client.attempt(UA.managerPath, UA.manager, "Donate", [.string(UA.editType), .stringVariantDictionary(
                [("eligible-for-search", .boolean(true))] + entries)]).errorName
        }
        #expect(userInfo(marshalledSize: limits.maximumUserInfoBytes).marshalledSize == limits.maximumUserInfoBytes)
        #expect(donate([("user-info", userInfo(marshalledSize: limits.maximumUserInfoBytes))]) == nil, "64 KiB exactly fits")
        #expect(donate([("user-info", userInfo(marshalledSize: limits.maximumUserInfoBytes + 1))]) == UA.error(.userInfoTooLarge))
        #expect(donate([("user-info", userInfo(marshalledSize: 4 * 1024 * 1024))]) == UA.error(.userInfoTooLarge))
        #expect(donate([("content-attributes", userInfo(marshalledSize: limits.maximumContentAttributesBytes + 1))]) == UA.error(.limitExceeded))
        #expect(donate([("title", .string(String(repeating: "t", count: limits.maximumTitleBytes + 1)))]) == UA.error(.limitExceeded))
        #expect(donate([("title", .string(String(repeating: "é", count: limits.maximumTitleBytes / 2 + 1)))]) == UA.error(.limitExceeded),
                "limits are bytes of UTF-8, not characters")
        #expect(donate([("keywords", .stringArray(Array(repeating: "k", count: limits.maximumKeywords + 1)))]) == UA.error(.limitExceeded))
        #expect(donate([("content-description", .string(String(repeating: "d", count: limits.maximumTextBytes + 1)))]) == UA.error(.limitExceeded))
        #expect(donate([("persistent-identifier", .string(String(repeating: "p", count: 1025)))]) == UA.error(.limitExceeded))
        #expect(donate([("required-user-info-keys", .stringArray(["missing"]))]) == UA.error(.missingRequiredUserInfoKeys))
        // Many small entries add up the same way.
        let many = TypedValue.stringVariantDictionary((0..<7000).map { ("k\($0)", .uint32(UInt32($0))) })
        #expect(many.marshalledSize > limits.maximumUserInfoBytes)
        #expect(donate([("user-info", many)]) == UA.error(.userInfoTooLarge))
        #expect(client.ping() != nil)
        #expect(try daemon.daemonPID() == pid)
    }

    /// A user-info nested past 48 levels would make the service's own
    /// messages (GetManagedObjects: 7 more levels, InterfacesAdded: 5) deeper
    /// than the 64 D-Bus allows, and the bus would disconnect the service.
    @Test("Nesting depth: user-info 48 levels deep is served everywhere it appears, 49 is refused")
    func nestingDepth() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        let watcher = try SignalRecorder(address: daemon.bus.address)
        _ = try client.manager("RegisterApplication", [.string(UA.editor)])
        /// An a{sv} user-info nested `depth` levels as D-Bus counts (the dictionary is 2, its variant 1).
        func nested(_ depth: Int) -> TypedValue {
            var value = TypedValue.int32(1)
            for level in 0..<(depth - 3) { value = level % 2 == 0 ? .array(elementType: value.signature, [value]) : .variant(value) }
            return .stringVariantDictionary([("deep", value)])
        }
        let limit = ActivityLimits.standard.maximumNestingDepth
        let path = try client.create(app: nil, [("user-info", nested(limit))], becomeCurrent: true)
        #expect(try client.property(path, "UserInfo", interface: UA.activity).isIdentical(to: nested(limit)))
        _ = try client.call(UA.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        _ = try client.call(path, UA.activity, "AddUserInfoEntries", [.stringVariantDictionary([("more", .uint32(1))])])
        _ = try client.donate(app: nil, [("user-info", nested(limit)), ("title", .string("deep donation"))])
        #expect(dbusErrorName { _ = try client.create(app: nil, [("user-info", nested(limit + 1))]) } == UA.error(.userInfoTooLarge))
        #expect(dbusErrorName { _ = try client.donate(app: nil, [("user-info", nested(limit + 9))]) } == UA.error(.userInfoTooLarge))
        #expect(dbusErrorName { _ = try client.create(app: nil, [("content-attributes", nested(limit + 1))]) } == UA.error(.limitExceeded))
        #expect(client.attempt(path, UA.activity, "AddUserInfoEntries", [.stringVariantDictionary([("deeper", nested(limit + 1))])]).errorName
                == UA.error(.userInfoTooLarge))
        let signals = watcher.stop()
        #expect(signals.contains { $0.member == "InterfacesAdded" }, "InterfacesAdded with the deep user-info went out")
        #expect(try daemon.daemonPID() == pid, "the service is still on the bus\n\(daemon.logTail())")
    }
}
