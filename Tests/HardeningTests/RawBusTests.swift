// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// What reaches the daemon when a client breaks the protocol.
///
/// libdbus will not build a malformed message (a Swift `String` cannot even
/// hold invalid UTF-8, and libdbus treats an invalid string, signature or
/// nesting as a fatal programming error of the sender), so these messages
/// are written byte by byte on a raw socket. The finding: `dbus-daemon`
/// validates every message and disconnects the sender of a malformed one;
/// the daemon never sees it. What does reach the daemon from a hostile
/// client is every well-formed message: unicast signals, unrequested
/// replies, file descriptors, the deepest legal nesting; those are tested
/// here and in the D-Bus fuzzer.
@Suite("Protocol abuse below libdbus")
struct RawBusTests {
    /// Starts the daemon with `--verbose`: it logs each sender it identifies,
    /// which shows whether a message from a given connection reached it.
    private func verboseDaemon() throws -> (ActivatedDaemon, pid_t) {
        let daemon = try ActivatedDaemon(exec: { "\(shellQuote($0)) --verbose" })
        return (daemon, try daemon.activate())
    }

    /// The daemon's `--verbose` log names each sender it identifies (`sender=:1.5 …`).
    static func daemonLogged(sender: String, in log: String) -> Bool {
        log.contains("sender=\(sender) ") || log.contains("sender=\(sender)\n")
    }

    @Test("Malformed messages (invalid UTF-8, nesting past 64, bad signatures, short bodies) are dropped by the bus; the daemon never sees them")
    func malformedMessagesNeverReachTheDaemon() throws {
        let (daemon, pid) = try verboseDaemon()

        // Positive control: a well-formed raw call is answered, and the daemon logs its sender.
        let control = try RawBusConnection(address: daemon.bus.address)
        let answer = try control.call(destination: UA.busName, path: UA.managerPath, interface: UA.manager, member: "Search",
                                      values: [.string("plain"), .stringVariantDictionary([])])
        #expect(answer?.errorName == nil && answer?.type == 2, "a valid raw Search is answered")
        #expect(waitUntil(timeout: 30) { Self.daemonLogged(sender: control.uniqueName, in: daemon.bus.log) },
                "the daemon logged the control sender")

        struct Case { let name: String; let values: [TypedValue]; let signature: String?; let patch: (inout [UInt8]) -> Void }
        let marker = "\u{1}\u{2}\u{3}\u{4}"
        var deep = TypedValue.int32(1)
        for _ in 0..<65 { deep = .variant(deep) }
        let cases = [
            Case(name: "invalid UTF-8 in a string", values: [.string("a\(marker)b"), .stringVariantDictionary([])], signature: nil) { bytes in
                // Overwrite the marker with an overlong encoding and a lone continuation byte.
                if let at = bytes.firstRange(of: [1, 2, 3, 4]) { bytes.replaceSubrange(at, with: [0xC0, 0x80, 0xFF, 0xBF]) }
            },
            Case(name: "invalid UTF-8 in a dictionary key", values: [.string("q"), .stringVariantDictionary([(marker, .uint32(3))])], signature: nil) { bytes in
                if let at = bytes.firstRange(of: [1, 2, 3, 4]) { bytes.replaceSubrange(at, with: [0xED, 0xA0, 0x80, 0x41]) } // a UTF-16 surrogate
            },
            Case(name: "a NUL inside a string", values: [.string("ab\(marker)"), .stringVariantDictionary([])], signature: nil) { bytes in
                if let at = bytes.firstRange(of: [1, 2, 3, 4]) { bytes.replaceSubrange(at, with: [0x41, 0x00, 0x41, 0x41]) }
            },
            Case(name: "65 nested variants", values: [.string("q"), .stringVariantDictionary([("deep", deep)])], signature: nil) { _ in },
            Case(name: "a signature that is not a type", values: [.string("q")], signature: "a") { _ in },
            Case(name: "a body shorter than its signature", values: [.string("q")], signature: "sa{sv}") { _ in },
            Case(name: "a string length past the body", values: [.string("query"), .stringVariantDictionary([])], signature: nil) { bytes in
                bytes[0] = 0xFF
            },
        ]
        for testCase in cases {
            let raw = try RawBusConnection(address: daemon.bus.address)
            try raw.send(.methodCall, destination: UA.busName, path: UA.managerPath, interface: UA.manager, member: "Search",
                         signature: testCase.signature, values: testCase.values, patch: testCase.patch)
            #expect(raw.waitForDisconnect(timeout: 5), "\(testCase.name): the bus should have disconnected the sender")
            let sender = raw.uniqueName
            // Anything that reached the daemon would have made it identify the sender (and log it).
            Thread.sleep(forTimeInterval: 0.2)
            #expect(!Self.daemonLogged(sender: sender, in: daemon.bus.log), "\(testCase.name): the daemon saw \(sender)")
        }
        let client = try daemon.connect()
        #expect(client.ping() != nil)
        #expect(try daemon.daemonPID() == pid, "the daemon kept running")
    }

    /// `org.freedesktop.DBus.NameLost` makes the daemon exit (it no longer
    /// owns its name); only the bus may send it. A unicast signal from any
    /// client reaches the daemon whatever its match rules.
    @Test("A forged NameLost/NameOwnerChanged/Disconnected signal from a client does not stop the daemon")
    func forgedBusSignals() throws {
        let (daemon, pid) = try verboseDaemon()
        let owner = try daemon.connect()
        let path = try owner.create(becomeCurrent: true)
        let raw = try RawBusConnection(address: daemon.bus.address)
        let daemonName = try owner.busDaemon("GetNameOwner", [.string(UA.busName)]).get().first?.stringValue ?? ""
        try raw.send(.signal, destination: daemonName, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                     member: "NameLost", values: [.string(UA.busName)])
        // A forged departure of the owner would invalidate its activities.
        try raw.send(.signal, destination: daemonName, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                     member: "NameOwnerChanged", values: [.string(owner.uniqueName), .string(owner.uniqueName), .string("")])
        try raw.send(.signal, destination: daemonName, path: "/org/freedesktop/DBus/Local", interface: "org.freedesktop.DBus.Local",
                     member: "Disconnected")
        Thread.sleep(forTimeInterval: 0.5)
        let probe = try daemon.connect()
        #expect(probe.ping() != nil, "the daemon must still answer")
        #expect(try daemon.daemonPID() == pid, "the daemon must not have exited\n\(daemon.logTail())")
        #expect(try probe.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath(path),
                "a forged NameOwnerChanged must not end the owner's activities")
    }

    @Test("Unrequested replies and errors sent to the daemon are harmless")
    func unrequestedReplies() throws {
        let (daemon, pid) = try verboseDaemon()
        let daemonName = try daemon.connect().busDaemon("GetNameOwner", [.string(UA.busName)]).get().first?.stringValue ?? ""
        let raw = try RawBusConnection(address: daemon.bus.address)
        for serial in UInt32(1)...UInt32(64) {
            // A reply claiming to be the bus's answer to GetConnectionCredentials, with another PID.
            try raw.send(.methodReturn, destination: daemonName, path: nil, interface: nil, member: nil, replySerial: serial,
                         values: [.stringVariantDictionary([("ProcessID", .uint32(1)), ("UnixUserID", .uint32(0))])])
            try raw.send(.error, destination: daemonName, path: nil, interface: nil, member: nil, replySerial: serial,
                         errorName: "org.freedesktop.DBus.Error.NoReply", values: [.string("forged")])
        }
        let client = try daemon.connect()
        _ = try client.create(becomeCurrent: true)
        #expect(client.ping() != nil)
        #expect(try daemon.daemonPID() == pid)
    }

    @Test("A reply forged by another connection does not answer the daemon's call to an app's handler")
    func forgedHandlerReplyIsIgnored() throws {
        let daemon = try ActivatedDaemon()
        _ = try daemon.activate()
        // The editor's handler holds the daemon's call until told to answer (false).
        let handler = try HoldingHandler(daemon)
        defer { handler.stop() }
        let continuing = try ContinuingCaller(daemon, title: "Forgery target", timeoutMilliseconds: 8000)
        let call = try #require(waitUntil(timeout: 10) { handler.held.first != nil } ? handler.held.first : nil,
                                "the handler got no call")

        // Positive control: this bus delivers unrequested replies, so the forgery below reaches the daemon.
        let rogue = try RawBusConnection(address: daemon.bus.address)
        try rogue.send(.methodReturn, destination: handler.client.uniqueName, path: nil, interface: nil, member: nil,
                       replySerial: HoldingHandler.straySerial, values: [.boolean(true)])
        #expect(waitUntil(timeout: 30) { handler.held.strays.contains(rogue.uniqueName) },
                "an unrequested reply from another connection reached the handler's connection")

        try rogue.send(.methodReturn, destination: try #require(call.sender), path: nil, interface: nil, member: nil,
                       replySerial: call.serial, values: [.boolean(true)])
        Thread.sleep(forTimeInterval: 0.5)
        #expect(continuing.outcome.value == nil,
                "the forged 'true' must not finish the continuation: \(String(describing: continuing.outcome.value))")

        // The real handler's answer decides.
        handler.client.connection.send(try Message.methodReturn(to: call, [.boolean(false)]))
        #expect(waitUntil(timeout: 30) { continuing.outcome.value != nil })
        guard case .failure(let failure)? = continuing.outcome.value else {
            Issue.record("the continuation succeeded: \(String(describing: continuing.outcome.value))")
            return
        }
        #expect(failure.name == UA.error(.continuationFailed), "\(failure)")
        continuing.wait()
    }

    @Test("A handler that leaves without answering fails the continuation at once, not at its deadline")
    func handlerLeavingFailsAtOnce() throws {
        let daemon = try ActivatedDaemon()
        _ = try daemon.activate()
        let handler = try HoldingHandler(daemon)
        let started = Date()
        let continuing = try ContinuingCaller(daemon, title: "Left behind", timeoutMilliseconds: 20_000)
        #expect(waitUntil(timeout: 30) { handler.held.first != nil }, "the handler got no call")
        // The app goes away with the daemon's call unanswered: the bus tells
        // the daemon so (NoReply, from the bus itself).
        handler.stop()
        handler.client.connection.close()

        #expect(waitUntil(timeout: 30) { continuing.outcome.value != nil })
        let elapsed = Date().timeIntervalSince(started)
        guard case .failure(let failure)? = continuing.outcome.value else {
            Issue.record("the continuation succeeded: \(String(describing: continuing.outcome.value))")
            return
        }
        #expect(failure.name == UA.error(.remoteApplicationTimedOut), "\(failure)")
        #expect(failure.message.contains("could not be reached"), "\(failure.message)")
        #expect(elapsed < 10, "the continuation waited \(elapsed) s, for its 20 s deadline rather than the bus's answer")
        continuing.wait()
    }

    /// The editor's continuation handler on a connection of its own: it holds
    /// every ContinueActivity call and notes replies with ``straySerial``
    /// that nobody asked it for.
    private final class HoldingHandler: @unchecked Sendable {
        static let straySerial: UInt32 = 4242
        let client: BusClient
        let held = HeldCalls()
        private var pump: Thread?

        init(_ daemon: ActivatedDaemon) throws {
            client = try daemon.connect()
            try client.manager("RegisterApplication", [.string(UA.editor)])
            try client.manager("RegisterHandler", [.objectPath("/com/example/Editor/Handler")])
            try client.connection.addFilter { [held] message in
                if message.kind == .methodReturn, message.replySerial == Self.straySerial, let sender = message.sender {
                    held.stray(from: sender)
                    return true
                }
                guard message.kind == .methodCall, message.member == "ContinueActivity" else { return false }
                held.hold(message)
                return true
            }
            let connection = client.connection
            let pump = Thread { [held] in
                while !held.isStopped { connection.readWriteDispatch(timeoutMilliseconds: 20) }
            }
            self.pump = pump
            pump.start()
        }

        func stop() {
            held.stop()
            while pump?.isFinished == false { usleep(1000) }
        }
    }

    /// ContinueActivity of an editor activity, called on a thread of its own.
    private final class ContinuingCaller: @unchecked Sendable {
        let outcome = HeldCalls.Box()
        private var thread: Thread?

        init(_ daemon: ActivatedDaemon, title: String, timeoutMilliseconds: UInt32) throws {
            let caller = try daemon.connect()
            let thread = Thread { [outcome] in
                outcome.set(caller.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
                    .string(UA.editType),
                    .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string(title))]),
                    .stringVariantDictionary([("timeout-ms", .uint32(timeoutMilliseconds))]),
                ], timeoutMilliseconds: Int32(timeoutMilliseconds) + 10_000))
            }
            self.thread = thread
            thread.start()
        }

        func wait() { while thread?.isFinished == false { usleep(1000) } }
    }

    /// Calls a test handler keeps unanswered, and replies nobody asked it for.
    private final class HeldCalls: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [Message] = []
        private var strayReplySenders: [String] = []
        private var stopped = false

        func hold(_ message: Message) { lock.withLock { calls.append(message) } }
        func stray(from sender: String) { lock.withLock { strayReplySenders.append(sender) } }
        var first: Message? { lock.withLock { calls.first } }
        var strays: [String] { lock.withLock { strayReplySenders } }
        var isStopped: Bool { lock.withLock { stopped } }
        func stop() { lock.withLock { stopped = true } }

        final class Box: @unchecked Sendable {
            private let lock = NSLock()
            private var stored: Result<[TypedValue], DBusFailure>?
            func set(_ value: Result<[TypedValue], DBusFailure>) { lock.withLock { stored = value } }
            var value: Result<[TypedValue], DBusFailure>? { lock.withLock { stored } }
        }
    }

    /// libdbus hands the receiver a `dup()` of every file descriptor in a
    /// message it reads; whoever reads `h` values must close them. No method
    /// of the daemon takes a file descriptor, but a properties argument or a
    /// variant can carry one.
    @Test("File descriptors sent inside arguments are not leaked, and 100 in one message do not cost the daemon its bus connection")
    func fileDescriptorsAreNotLeaked() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        let devNull = open("/dev/null", O_RDONLY)
        defer { close(devNull) }
        _ = client.attempt(UA.managerPath, UA.manager, "Search", [.string("warm"), .stringVariantDictionary([])])
        let before = ProcessProbe.openDescriptors(pid)
        let path = try client.create(becomeCurrent: false)
        for i in 0..<100 {
            let fd = TypedValue.unixFD(devNull)
            let results = [
                client.attempt(UA.managerPath, UA.manager, "CreateActivity", [
                    .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor)),
                                                                    ("user-info", .stringVariantDictionary([("fd", fd)]))]),
                ]),
                client.attempt(path, UA.properties, "Set", [.string(UA.activity), .string("Title"), .variant(fd)]),
                client.attempt(UA.managerPath, UA.manager, "Search", [.string("x\(i)"), .stringVariantDictionary([("limit", fd)])]),
            ]
            for result in results where result.errorName.map(UA.documentedErrors.contains) == false {
                Issue.record("undocumented error \(result.errorName ?? "")")
            }
        }
        // More descriptors in one message than libdbus accepts by default (16):
        // the test bus passes up to 4096, the kernel 253 (a stock session bus 16).
        let many = TypedValue.array(elementType: "h", Array(repeating: .unixFD(devNull), count: 100))
        #expect(client.attempt(UA.managerPath, UA.manager, "Search", [.string("many"), .stringVariantDictionary([("limit", many)])]).errorName
                == UA.error(.invalidArgument), "a message with 100 descriptors is answered, not a reason to drop the daemon's bus connection")
        Thread.sleep(forTimeInterval: 0.3)
        let after = ProcessProbe.openDescriptors(pid)
        #expect(after <= before + 4, "the daemon had \(before) open descriptors, then \(after) after 300 calls carrying one each")
        #expect(try daemon.daemonPID() == pid)
    }
}
