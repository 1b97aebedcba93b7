// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
import UserActivityCore

/// Per-app shares of the session-wide caps: a sandboxed app over any number
/// of connections gets its share and no more; unconfined callers keep the
/// session cap; everyone else is still served.
@Suite("Per-app shares")
struct AppShareTests {
    static func small() -> ActivityLimits {
        var limits = ActivityLimits()
        limits.maximumLiveActivitiesPerConnection = 5
        limits.maximumLiveActivitiesPerApp = 7
        limits.maximumLiveActivities = 20
        limits.maximumPendingContinuationsPerConnection = 4
        limits.maximumPendingContinuationsPerApp = 6
        limits.maximumPendingContinuations = 16
        return limits
    }

    /// A service on a clock the test steps, with `adjust`ed limits.
    static func clockedService(_ adjust: (inout ActivityLimits) -> Void) throws -> (ManualWallClock, InProcessService) {
        let clock = ManualWallClock(start: 1_700_000_000_000_000)
        var limits = ActivityLimits()
        adjust(&limits)
        return (clock, try InProcessService(limits: limits, clock: { clock.now }))
    }

    @Test("Live activities: a sandboxed app over three connections gets its share of 7; another app and unconfined callers are still served")
    func liveActivityShare() throws {
        let harness = try InProcessService(limits: Self.small())
        let limitExceeded = UA.error(.limitExceeded)
        let connections = try (0..<3).map { _ in try harness.client(as: .flatpak(UA.sandboxed)) }
        var created = 0
        for connection in connections {
            for _ in 0..<3 where (try? connection.create(UA.sandboxedType, app: nil)) != nil { created += 1 }
        }
        #expect(created == 7, "the sandboxed app created \(created) live activities over 3 connections; its share is 7")
        let refused = dbusErrorName { _ = try connections[2].create(UA.sandboxedType, app: nil) }
        #expect(refused == limitExceeded)
        // Another sandboxed app has its own share, and an unconfined caller the session's cap.
        let other = try harness.client(as: .flatpak(UA.player))
        for _ in 0..<5 { _ = try other.create(UA.playType, app: nil) }
        // The unconfined caller names the sandboxed app and goes past that app's share (8 > 7): only the session cap (20) holds it.
        let hosts = try (0..<2).map { _ in try harness.client() }
        for host in hosts { for _ in 0..<4 { _ = try host.create(UA.sandboxedType, app: UA.sandboxed) } }
        #expect(dbusErrorName { _ = try hosts[1].create(UA.sandboxedType, app: UA.sandboxed) } == limitExceeded, "the session cap: 7 + 5 + 8 = 20")
        // A connection closing gives its share back.
        connections[0].close()
        #expect(waitUntil(timeout: 30) { (try? connections[1].create(UA.sandboxedType, app: nil)) != nil })
    }

    @Test("Continuations in flight: a sandboxed app over three connections gets its share of 6; a host caller is still served")
    func continuationShare() throws {
        let harness = try InProcessService(limits: Self.small())
        let connections = try (0..<3).map { _ in try harness.client(as: .flatpak(UA.sandboxed)) }
        /// ContinueActivity of the editor's type (no app-id: a sandboxed caller may not name another publisher).
        func send(_ client: BusClient) throws {
            let message = Message.methodCall(destination: UA.busName, path: UA.managerPath, interface: UA.manager, member: "ContinueActivity")
            try message.append([.string(UA.editType), .stringVariantDictionary([]),
                                .stringVariantDictionary([("timeout-ms", .uint32(60_000))])])
            client.connection.send(message)
        }
        func continueNow(_ client: BusClient, timeoutMilliseconds: UInt32 = 60_000) -> String? {
            client.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
                .string(UA.editType), .stringVariantDictionary([]),
                .stringVariantDictionary([("timeout-ms", .uint32(timeoutMilliseconds))]),
            ], timeoutMilliseconds: 5000).errorName
        }
        for connection in connections[0..<2] {
            for _ in 0..<3 { try send(connection) }
            _ = try connection.call(UA.managerPath, UA.properties, "GetAll", [.string(UA.manager)]) // all handled, in order
        }
        let refused = continueNow(connections[2])
        #expect(refused == UA.error(.limitExceeded), "the 7th continuation of the app, from a connection that has none: \(refused ?? "accepted")")
        // Unconfined callers are held by their connection's limit and the session's only.
        let host = try harness.client()
        #expect(continueNow(host, timeoutMilliseconds: 50) == UA.error(.remoteApplicationTimedOut))
        connections[0].close()
        #expect(waitUntil(timeout: 30) { continueNow(connections[2], timeoutMilliseconds: 50) == UA.error(.remoteApplicationTimedOut) },
                "a connection closing gives the app's share back")
    }

    @Test("Launches: a token bucket per caller on the service clock; the next launch is refused with LimitExceeded until time passes")
    func launchRate() throws {
        let (clock, harness) = try Self.clockedService { $0.launchBurstPerApp = 3; $0.launchIntervalMicroseconds = 2_000_000 }
        let app = try harness.client(as: .flatpak(UA.sandboxed))
        /// A continuation into the editor, which is launched (`Exec=/bin/true`) and never registers a handler.
        func launchEditor(_ client: BusClient) -> DBusFailure? {
            let result = client.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
                .string(UA.editType), .stringVariantDictionary([]),
                .stringVariantDictionary([("timeout-ms", .uint32(100))]),
            ], timeoutMilliseconds: 10_000)
            if case .failure(let failure) = result { return failure }
            return nil
        }
        for n in 0..<3 {
            let outcome = launchEditor(app)
            #expect(outcome?.name != UA.error(.limitExceeded), "launch \(n + 1) of a burst of 3: \(outcome.map { "\($0.name): \($0.message)" } ?? "opened")")
        }
        let refused = launchEditor(app)
        #expect(refused?.name == UA.error(.limitExceeded) && refused?.message.contains("too many launches") == true, "\(String(describing: refused))")
        // Another sandboxed app (of the editor's team, so it may continue into it) has its own budget.
        let other = try harness.client(as: .flatpak(UA.viewer))
        #expect(launchEditor(other)?.name != UA.error(.limitExceeded))
        let sameAppAgain = try harness.client(as: .flatpak(UA.sandboxed))
        #expect(launchEditor(sameAppAgain)?.name == UA.error(.limitExceeded), "the budget is the app's, not the connection's")
        clock.advance(by: 2_000_000)
        #expect(launchEditor(app)?.name != UA.error(.limitExceeded), "one launch more per interval")
        #expect(launchEditor(app)?.name == UA.error(.limitExceeded))
    }

    @Test("Donations: a sandboxed app over two connections gets its share (5 at once, then one per second of the service clock); another app and unconfined callers are still served")
    func donationShare() throws {
        let (clock, harness) = try Self.clockedService { $0.donationBurstPerApp = 5; $0.donationIntervalMicroseconds = 1_000_000 }
        let connections = try (0..<2).map { _ in try harness.client(as: .flatpak(UA.sandboxed)) }
        func donate(_ client: BusClient, _ type: String, app: String? = nil, _ n: Int) -> String? {
            var entries: [(String, TypedValue)] = [("title", .string("donation \(n)"))]
            if let app { entries.append(("app-id", .string(app))) }
            return client.attempt(UA.managerPath, UA.manager, "Donate", [.string(type), .stringVariantDictionary(entries)]).errorName
        }
        var accepted = 0
        for n in 0..<8 where donate(connections[n % 2], UA.sandboxedType, n) == nil { accepted += 1 }
        #expect(accepted == 5, "the sandboxed app's donations accepted over 2 connections: \(accepted); its share is 5 at once")
        let refused = connections[0].attempt(UA.managerPath, UA.manager, "Donate",
                                             [.string(UA.sandboxedType), .stringVariantDictionary([("title", .string("one more"))])])
        guard case .failure(let failure) = refused else { Issue.record("the 6th donation was accepted"); return }
        #expect(failure.name == UA.error(.limitExceeded) && failure.message.contains("too many donations"), "\(failure.name): \(failure.message)")
        // A new connection of the same app shares the app's budget.
        #expect(donate(try harness.client(as: .flatpak(UA.sandboxed)), UA.sandboxedType, 9) == UA.error(.limitExceeded))
        // Another sandboxed app has its own share; an unconfined caller is not counted.
        let other = try harness.client(as: .flatpak(UA.player))
        #expect(donate(other, UA.playType, 10) == nil)
        let host = try harness.client()
        for n in 0..<20 { #expect(donate(host, UA.sandboxedType, app: UA.sandboxed, 100 + n) == nil, "unconfined donation \(n)") }
        // An invalid donation does not take from the share.
        clock.advance(by: 1_000_000)
        #expect(donate(connections[1], "not a type", 11) == UA.error(.invalidArgument))
        #expect(donate(connections[1], UA.sandboxedType, 12) == nil, "one more per interval")
        #expect(donate(connections[1], UA.sandboxedType, 13) == UA.error(.limitExceeded))
    }

    @Test("Desktop search: ActivateResult calls of one app count against that app, not the service's own connection; the shell's still works")
    func desktopSearchCountsTheAskingCaller() throws {
        var limits = Self.small()
        limits.maximumPendingContinuationsPerApp = 100
        let harness = try InProcessService(limits: limits)
        let searchPath = UA.managerPath + "/SearchProvider"
        let searchInterface = "org.gnome.Shell.SearchProvider2"
        // The sandboxed app's handler is registered but never answers: its continuations stay in flight.
        let silent = try harness.client(as: .flatpak(UA.sandboxed))
        _ = try silent.manager("RegisterHandler", [.objectPath("/com/example/Sandboxed/Handler")])
        let mine = try silent.donate(UA.sandboxedType, app: nil, [("title", .string("my own entry")), ("eligible-for-search", .boolean(true))])
        // The editor's handler answers every continuation at once.
        let editor = try harness.client()
        _ = try editor.manager("RegisterApplication", [.string(UA.editor)])
        _ = try editor.manager("RegisterHandler", [.objectPath("/com/example/Editor/Handler")])
        let editorConnection = editor.connection
        try editorConnection.addFilter { message in
            guard message.kind == .methodCall, message.member == "ContinueActivity" else { return false }
            _ = editorConnection.send(try! Message.methodReturn(to: message, [.boolean(true)]))
            return true
        }
        let stop = Failures()
        let pump = Thread { while stop.items.isEmpty { editorConnection.readWriteDispatch(timeoutMilliseconds: 20) } }
        pump.start()
        defer {
            stop.add("stop")
            while !pump.isFinished { usleep(1000) }
        }
        let shellsEntry = try harness.client().donate(UA.editType, app: UA.editor, [("title", .string("the shell's pick")), ("eligible-for-search", .boolean(true))])

        // The app fills its connection's share through the search provider, on its own entry.
        let attacker = try harness.client(as: .flatpak(UA.sandboxed))
        for _ in 0..<limits.maximumPendingContinuationsPerConnection {
            let message = Message.methodCall(destination: UA.busName, path: searchPath, interface: searchInterface, member: "ActivateResult")
            try message.append([.string(mine), .stringArray([]), .uint32(0)])
            attacker.connection.send(message)
        }
        _ = try attacker.call(UA.managerPath, UA.properties, "GetAll", [.string(UA.manager)])
        let more = attacker.attempt(searchPath, searchInterface, "ActivateResult", [.string(mine), .stringArray([]), .uint32(0)], timeoutMilliseconds: 5000)
        #expect(more.errorName == UA.error(.limitExceeded), "the app's own connection is at its limit: \(more)")
        // The shell's ActivateResult is not held by the app's continuations.
        let shell = try harness.client()
        let activated = shell.attempt(searchPath, searchInterface, "ActivateResult", [.string(shellsEntry), .stringArray([]), .uint32(0)],
                                   timeoutMilliseconds: 20_000)
        #expect(activated.errorName == nil, "the shell's ActivateResult: \(activated)")
    }
}
