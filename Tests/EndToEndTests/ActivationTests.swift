// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Activation and process lifecycle")
struct ActivationTests {
    @Test("The first busctl call starts the daemon by D-Bus activation, and it answers")
    func firstCallActivatesTheDaemon() throws {
        let h = try DaemonHarness()
        #expect(try h.nameHasOwner() == false, "nothing owns the name before the first call")

        // busctl --user call org.example.UserActivity /org/example/UserActivity org.freedesktop.DBus.Properties Get ss org.example.UserActivity Version
        let get = try h.busctl(["call", UA.busName, UA.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                "ss", UA.managerInterface, "Version"])
        #expect(get.succeeded, "\(get)\n\(h.logTail())")
        let version = get.trimmedStdout.firstMatch(of: #/^v s "([^"]+)"$/#).map { String($0.1) }
        #expect(version?.isEmpty == false, "expected `v s \"<version>\"`, got \(get.trimmedStdout)")

        #expect(try h.nameHasOwner(), "the activated daemon owns org.example.UserActivity")
        let pid = try #require(try h.daemonPID())
        let argv = commandLine(of: pid)
        #expect(argv.first.map { ($0 as NSString).lastPathComponent } == "useractivityd", "owner runs \(argv)")
        #expect(argv.contains("--verbose"), "started with the Exec line of the .service file: \(argv)")

        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.freedesktop.DBus.Properties.Get org.example.UserActivity Version
        let gdbus = try h.gdbusCall("org.freedesktop.DBus.Properties.Get", [UA.managerInterface, "Version"])
        #expect(gdbus.succeeded, "\(gdbus)")
        #expect(gdbus.trimmedStdout == "(<'\(version ?? "?")'>,)")

        // The same instance keeps answering (no second activation).
        #expect(try h.daemonPID() == pid)
        // Peer is served too.
        let ping = try h.busctl(["call", UA.busName, UA.managerPath, "org.freedesktop.DBus.Peer", "Ping"])
        #expect(ping.succeeded, "\(ping)")
    }

    @Test("SIGTERM: the daemon exits cleanly and releases its name; the next call activates it again")
    func sigtermExitsCleanly() throws {
        let h = try DaemonHarness()
        try h.activate()
        let pid = try #require(try h.daemonPID())

        // An app with a current activity must not keep the daemon from exiting.
        let app = try h.connect()
        _ = try app.create(UA.editType, app: UA.editor, [("title", .string("Open document"))], becomeCurrent: true)

        #expect(kill(pid, SIGTERM) == 0)
        let released = try waitUntil(timeout: 30, interval: 0.05) { try !h.nameHasOwner() }
        #expect(released, "org.example.UserActivity still owned 30 s after SIGTERM\n\(h.logTail())")
        let exited = waitUntil(timeout: 30, interval: 0.05) { processState(pid) != .running }
        #expect(exited, "useractivityd[\(pid)] still running 30 s after SIGTERM\n\(h.logTail())")
        if case .zombie(let status) = processState(pid) {
            // Not reaped yet: the kernel still has its wait status.
            #expect(status == 0, "wait status \(status): exit code \(status >> 8), signal \(status & 0x7f)\n\(h.logTail())")
        }
        let log = h.bus.log
        #expect(!log.contains("Fatal error") && !log.contains("Program crashed"), "\(h.logTail())")

        // The live activity went with the daemon; a new call starts a fresh instance.
        #expect(try !h.activate().isEmpty)
        let second = try #require(try h.daemonPID())
        #expect(second != pid)
        #expect(try h.currentActivity() == "/")
    }
}
