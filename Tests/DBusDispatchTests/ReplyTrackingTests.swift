// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import Synchronization
import TestSupport
import Testing
import TypedValues

/// `Connection.callAsync` on a connection driven by a GLib loop matches
/// replies itself (not with libdbus pending calls): replies, error replies,
/// deadlines of different lengths, many calls in flight from two threads,
/// and a bus that goes away.
@Suite("Reply tracking of asynchronous calls")
struct ReplyTrackingTests {
    /// A peer on its own thread: `Echo` answers its argument, `Fail` answers
    /// an error, `Ignore` never answers, `Hold` keeps the call for the test.
    private final class Responder: @unchecked Sendable {
        static let path = "/com/example/Responder"
        let connection: Connection
        private let stopped = Atomic<Bool>(false)
        private var thread: Thread?
        private let heldLock = NSLock()
        private var heldCalls: [Message] = []
        var held: [Message] { heldLock.withLock { heldCalls } }

        init(address: String) throws {
            connection = try Connection.bus(address: address)
            try connection.addFilter { [unowned connection] message in
                guard message.kind == .methodCall, message.path == Self.path else { return false }
                switch message.member {
                case "Echo":
                    if let reply = try? Message.methodReturn(to: message, (try? message.arguments()) ?? []) { connection.send(reply) }
                case "Fail":
                    connection.send(Message.error(to: message, name: "com.example.Error.Told", message: "told to fail"))
                case "Hold":
                    self.heldLock.withLock { self.heldCalls.append(message) }
                default:
                    break
                }
                return true
            }
            let thread = Thread { [unowned self] in
                while !stopped.load(ordering: .relaxed) { connection.readWriteDispatch(timeoutMilliseconds: 20) }
            }
            self.thread = thread
            thread.start()
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            while thread?.isFinished == false { usleep(1000) }
        }
    }

    /// A caller connection attached to a GLib loop that runs on its own thread.
    private final class LoopCaller: @unchecked Sendable {
        let connection: Connection
        let loop = MainLoop.withNewContext()
        private var thread: Thread?

        init(address: String) throws {
            connection = try Connection.bus(address: address)
            try DBusMainLoopBridge.attach(connection, to: loop)
            nonisolated(unsafe) let loop = self.loop  // only its own thread runs it; quit() is thread-safe
            let thread = Thread { loop.withThreadDefault { loop.run() } }
            self.thread = thread
            thread.start()
            _ = waitUntil(timeout: 30) { loop.isRunning }
        }

        func stop() {
            loop.quit()
            while thread?.isFinished == false { usleep(1000) }
        }
    }

    /// Results collected from the loop's thread, read by the test.
    private final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [String: (Result<Message, DBusFailure>, Double)] = [:]
        let started = ContinuousClock.now

        func record(_ key: String, _ result: Result<Message, DBusFailure>) {
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            lock.withLock { results[key] = (result, seconds) }
        }
        func result(_ key: String) -> (Result<Message, DBusFailure>, Double)? { lock.withLock { results[key] } }
        var count: Int { lock.withLock { results.count } }
    }

    /// A private bus with a responder and a loop-driven caller on it.
    private final class Fixture: @unchecked Sendable {
        let session: SessionEnvironment
        let bus: PrivateBus
        let responder: Responder
        let caller: LoopCaller
        let outcomes = Outcomes()

        init() throws {
            session = try SessionEnvironment()
            bus = try PrivateBus(environment: session)
            responder = try Responder(address: bus.address)
            caller = try LoopCaller(address: bus.address)
        }

        /// Calls `member` on the responder (at `destination`, by default its
        /// unique name); the outcome is filed under `key`.
        func call(_ member: String, _ values: [TypedValue] = [], timeout: Int32 = 5000, key: String,
                  destination: String? = nil, acceptingReplyFrom accepts: ((String) -> Bool)? = nil) throws {
            let message = Message.methodCall(destination: destination ?? responder.connection.uniqueName, path: Responder.path,
                                             interface: "com.example.Responder", member: member)
            try message.append(values)
            caller.connection.callAsync(message, timeoutMilliseconds: timeout, acceptingReplyFrom: accepts) { [outcomes] in
                outcomes.record(key, $0)
            }
        }

        deinit {
            caller.stop()
            responder.stop()
            bus.stop()
        }
    }

    @Test("Replies and error replies reach their calls; each deadline passes on time, a short one before an earlier long one")
    func repliesErrorsAndDeadlines() throws {
        let fixture = try Fixture()
        let outcomes = fixture.outcomes

        try fixture.call("Ignore", timeout: 3000, key: "long")
        try fixture.call("Ignore", timeout: 300, key: "short")
        try fixture.call("Echo", [.string("hello"), .uint32(7)], key: "echo")
        try fixture.call("Fail", key: "fail")

        #expect(waitUntil(timeout: 30) { outcomes.count == 4 })
        if case .success(let reply)? = outcomes.result("echo")?.0 {
            #expect(try reply.arguments() == [.string("hello"), .uint32(7)])
        } else {
            Issue.record("Echo: \(String(describing: outcomes.result("echo")))")
        }
        if case .failure(let failure)? = outcomes.result("fail")?.0 {
            #expect(failure.name == "com.example.Error.Told" && failure.message == "told to fail")
        } else {
            Issue.record("Fail: \(String(describing: outcomes.result("fail")))")
        }
        let short = try #require(outcomes.result("short"))
        let long = try #require(outcomes.result("long"))
        for (name, outcome) in [("short", short), ("long", long)] {
            guard case .failure(let failure) = outcome.0 else { Issue.record("\(name) was answered"); continue }
            #expect(failure.name == "org.freedesktop.DBus.Error.NoReply", "\(name): \(failure)")
        }
        // The short deadline must not wait for the long one armed before it.
        #expect(short.1 >= 0.29 && short.1 < 2.5, "the 300 ms call ended after \(short.1) s")
        #expect(long.1 >= 2.99, "the 3000 ms call ended after \(long.1) s")
        #expect(long.1 - short.1 > 2, "each deadline is its own")
    }

    @Test("Many calls in flight from two threads each get their own reply")
    func manyCallsInFlight() throws {
        let fixture = try Fixture()
        let outcomes = fixture.outcomes
        let total = 400
        let other = Thread {
            for n in stride(from: 1, to: total, by: 2) {
                try? fixture.call("Echo", [.uint32(UInt32(n))], key: "\(n)")
            }
        }
        other.start()
        for n in stride(from: 0, to: total, by: 2) {
            try fixture.call("Echo", [.uint32(UInt32(n))], key: "\(n)")
        }
        #expect(waitUntil(timeout: 30) { outcomes.count == total }, "\(outcomes.count) of \(total) answered")
        for n in 0..<total {
            guard case .success(let reply)? = outcomes.result("\(n)")?.0 else {
                Issue.record("call \(n): \(String(describing: outcomes.result("\(n)")))")
                continue
            }
            #expect(try reply.arguments() == [.uint32(UInt32(n))], "call \(n) got another call's reply")
        }
    }

    @Test("Calls still waiting when the bus goes away fail at once with Disconnected")
    func disconnectFailsWaitingCalls() throws {
        let fixture = try Fixture()
        let outcomes = fixture.outcomes
        try fixture.call("Ignore", timeout: 60_000, key: "waiting")
        usleep(200_000)
        fixture.responder.stop()
        fixture.bus.stop()
        #expect(waitUntil(timeout: 30) { outcomes.count == 1 })
        guard case .failure(let failure)? = outcomes.result("waiting")?.0 else {
            Issue.record("the call was not failed: \(String(describing: outcomes.result("waiting")))")
            return
        }
        #expect(failure.name == "org.freedesktop.DBus.Error.Disconnected", "\(failure)")
        #expect(outcomes.result("waiting")!.1 < 10)
        // Calls made afterwards fail at once too.
        try fixture.call("Echo", key: "after")
        #expect(waitUntil(timeout: 30) { outcomes.count == 2 })
    }

    /// Replies sent by `rogue` that reached `connection` (the positive control
    /// of the forgery tests: this bus does deliver unrequested replies).
    private final class StrayReplies: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var seen: Int { lock.withLock { count } }

        init(on connection: Connection, from rogue: String) throws {
            try connection.addFilter { [self] message in
                if message.kind == .methodReturn, message.sender == rogue { lock.withLock { count += 1 } }
                return false
            }
        }
    }

    @Test("A call to a well-known name takes its reply only from a sender the caller accepts")
    func wellKnownNameReplyFromOwnerOnly() throws {
        let fixture = try Fixture()
        let outcomes = fixture.outcomes
        let owner = fixture.responder.connection.uniqueName
        #expect(try fixture.responder.connection.requestName("com.example.Responder") == .primaryOwner)
        let rogue = try Connection.bus(address: fixture.bus.address)
        let strays = try StrayReplies(on: fixture.caller.connection, from: rogue.uniqueName)

        try fixture.call("Hold", key: "held", destination: "com.example.Responder", acceptingReplyFrom: { $0 == owner })
        #expect(waitUntil(timeout: 30) { !fixture.responder.held.isEmpty })
        let call = try #require(fixture.responder.held.first)

        // Another connection answers first, with the call's serial.
        #expect(rogue.send(try Message.methodReturn(to: call, [.string("forged")])))
        rogue.flush()
        #expect(waitUntil(timeout: 30) { strays.seen == 1 }, "the forged reply reached the caller's connection")
        usleep(200_000)
        #expect(outcomes.result("held") == nil, "the forged reply answered the call: \(String(describing: outcomes.result("held")))")

        // The owner's answer decides.
        fixture.responder.connection.send(try Message.methodReturn(to: call, [.string("genuine")]))
        #expect(waitUntil(timeout: 30) { outcomes.result("held") != nil })
        guard case .success(let reply)? = outcomes.result("held")?.0 else {
            Issue.record("\(String(describing: outcomes.result("held")))")
            return
        }
        #expect(try reply.arguments() == [.string("genuine")])
        #expect(reply.sender == owner)
    }

    @Test("A blocking call to a unique name fails rather than return a reply forged by another connection")
    func blockingCallRefusesForgedReply() throws {
        let fixture = try Fixture()
        let responder = fixture.responder
        let rogue = try Connection.bus(address: fixture.bus.address)
        let caller = try Connection.bus(address: fixture.bus.address)
        let outcome = Outcomes()
        let calling = Thread {
            let message = Message.methodCall(destination: responder.connection.uniqueName, path: Responder.path,
                                             interface: "com.example.Responder", member: "Hold")
            outcome.record("blocking", Result { () throws(DBusFailure) in try caller.call(message, timeoutMilliseconds: 10_000) })
        }
        calling.start()
        #expect(waitUntil(timeout: 30) { !responder.held.isEmpty })
        let call = try #require(responder.held.first)

        #expect(rogue.send(try Message.methodReturn(to: call, [.string("forged")])))
        rogue.flush()
        #expect(waitUntil(timeout: 30) { outcome.result("blocking") != nil }, "the forged reply reached the blocking call")
        while !calling.isFinished { usleep(1000) }
        guard case .failure(let failure)? = outcome.result("blocking")?.0 else {
            Issue.record("the blocking call returned the forgery: \(String(describing: outcome.result("blocking")))")
            return
        }
        #expect(failure.message.contains("ignored as forged") && failure.message.contains(rogue.uniqueName), "\(failure)")
    }
}
