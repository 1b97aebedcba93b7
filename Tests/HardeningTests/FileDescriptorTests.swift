// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Unix file descriptors sent to the daemon in places where it takes none:
/// each is closed, and none is duplicated in the first place when the
/// daemon only needs an error reply's text.
@Suite("File descriptors")
struct FileDescriptorTests {
    /// The number of descriptors `pid` holds open.
    static func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// The editor's handler, on a connection of its own: it answers every
    /// ContinueActivity with an error reply carrying 16 descriptors, and a
    /// variant-wrapped one deeper in.
    final class FDLadenHandler: @unchecked Sendable {
        static let errorName = "com.example.Editor.Error.Hostile"
        let client: BusClient
        private let stopped = Failures()
        private var pump: Thread?

        init(_ daemon: ActivatedDaemon) throws {
            client = try daemon.connect()
            try client.manager("RegisterApplication", [.string(UA.editor)])
            try client.manager("RegisterHandler", [.objectPath("/com/example/Editor/Handler")])
            let connection = client.connection
            let spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try connection.addFilter { message in
                guard message.kind == .methodCall, message.member == "ContinueActivity" || message.member == "SaveActivity" else { return false }
                let reply = Message.error(to: message, name: Self.errorName, message: "no, and here are some descriptors")
                try? reply.append(Array(repeating: TypedValue.unixFD(spare), count: 16)
                                  + [.variant(.array(elementType: "h", [.unixFD(spare), .unixFD(spare)]))])
                _ = connection.send(reply)
                return true
            }
            let pump = Thread { [stopped] in
                while stopped.items.isEmpty { connection.readWriteDispatch(timeoutMilliseconds: 20) }
                close(spare)
            }
            self.pump = pump
            pump.start()
        }

        func stop() {
            stopped.add("stop")
            while pump?.isFinished == false { usleep(1000) }
        }
    }

    /// Also with the daemon's hard limit at 1024 descriptors (as where the
    /// attack was found: it could not raise its soft limit past that).
    @Test("A handler answering every ContinueActivity with fd-laden error replies: the daemon's descriptor count stays flat and it keeps serving",
          arguments: [nil, 1024])
    func fdLadenErrorReplies(descriptorLimit: Int?) throws {
        let daemon = try ActivatedDaemon(exec: descriptorLimit.map { limit in
            { daemonPath in "/usr/bin/prlimit --nofile=\(limit):\(limit) \(shellQuote(daemonPath))" }
        })
        let pid = try daemon.activate()
        let handler = try FDLadenHandler(daemon)
        defer { handler.stop() }
        let caller = try daemon.connect()
        func continueOnce() -> String? {
            caller.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
                .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string("fd"))]),
                .stringVariantDictionary([("timeout-ms", .uint32(20_000))]),
            ]).errorName
        }
        // Warm up: whatever the daemon opens once (its store, caches) is open before the baseline.
        for _ in 0..<50 { #expect(continueOnce() == FDLadenHandler.errorName) }
        let before = Self.openDescriptors(pid)
        let rounds = 10_000 // 10,000 × 18 descriptors: far past the 1024 a leak could survive
        var answered = 0
        let started = Date()
        for _ in 0..<rounds where continueOnce() == FDLadenHandler.errorName { answered += 1 }
        let elapsed = seconds(since: started)
        let after = Self.openDescriptors(pid)
        print("fd-laden error replies (descriptor limit \(descriptorLimit.map(String.init) ?? "the hard limit")): \(rounds) round trips in \(String(format: "%.2f", elapsed)) s; daemon descriptors \(before) → \(after)")
        #expect(answered == rounds, "\(answered) of \(rounds) continuations got the handler's error\n\(daemon.logTail())")
        // A message still referenced for a moment holds its own 18 (libdbus closes them when it is
        // freed); a leak grows with the rounds (18 per round without the fix: 929 → 19,982 here).
        #expect(before > 0 && after <= before + 64, "the daemon holds \(after) descriptors, \(before) before \(rounds) fd-laden replies")
        #expect(caller.ping() != nil)
        #expect(try daemon.daemonPID() == pid, "the daemon is still the one on the bus\n\(daemon.logTail())")
    }
}
