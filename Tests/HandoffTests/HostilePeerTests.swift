// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// A stranger holding connections open without a word: opens N TCP
/// connections, prints `OPENED n`, then `CLOSED m` once the daemon closed
/// them all (or after 40 s).
let idleConnectionsScript = #"""
import socket, sys, time, select
port, count = int(sys.argv[1]), int(sys.argv[2])
sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
print("OPENED %d" % len(sockets), flush=True)
waiting = set(sockets)
deadline = time.time() + 40
while waiting and time.time() < deadline:
    ready, _, _ = select.select(list(waiting), [], [], 1)
    for s in ready:
        try:
            if not s.recv(100):
                waiting.discard(s)
        except OSError:
            waiting.discard(s)
print("CLOSED %d" % (count - len(waiting)), flush=True)
"""#

@Suite("Handoff against hostile or broken peers", .serialized)
struct HostilePeerTests {
    /// Starts the raw peer (`Peers/raw_peer.py`: a TLS client with a key of
    /// its own that does one bad thing, `mode`) against `stack` and returns
    /// its lines (`HANDSHAKE <version>`, `HELLO`, `CLOSED`) once it ended.
    func runRawPeer(_ stack: Stack, mode: String) throws -> [String] {
        let root = stack.session.root
        let result = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                     "-nodes", "-keyout", root + "/raw-key.pem", "-out", root + "/raw-cert.pem", "-subj", "/CN=raw", "-days", "1"], environment: stack.bus.environment)
        guard result.exitCode == 0 else { throw HandoffTestFailure("openssl failed: \(result.stderr)") }
        let process = try stack.bus.spawn("/usr/bin/python3", [PeerScripts.path("raw_peer.py"), "\(stack.port)", mode, root + "/raw-cert.pem", root + "/raw-key.pem"])
        var lines: [String] = []
        while let line = try process.readLine(timeout: 30) {
            lines.append(line)
            if line == "CLOSED" { break }
        }
        process.terminate(grace: 0.5)
        return lines
    }

    /// After the bad peer, the daemon still pairs with a real device.
    func stillServes(_ stacks: TwoStacks) throws {
        _ = try stacks.pair()
    }

    @Test func anUnknownKeyIsRefusedWhileNotDiscoverable() throws {
        let stacks = try TwoStacks()
        let lines = try runRawPeer(stacks.b, mode: "hello")
        #expect(!lines.contains("HELLO"), "\(lines)\n\(stacks.logs)")
        #expect(stacks.b.logEventually(contains: "handshake"), "\(stacks.logs)")
        #expect(lines.last == "CLOSED")
        try stillServes(stacks)
    }

    @Test func anUnpairedPeerSendingAnAdvertIsDisconnected() throws {
        let stacks = try TwoStacks()
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try runRawPeer(stacks.b, mode: "advert")
        #expect(lines.contains("HELLO") && lines.last == "CLOSED", "\(lines)")
        #expect(stacks.b.logEventually(contains: "is not paired and sent a advert frame"), "\(stacks.logs)")
        try stillServes(stacks)
    }

    @Test func aFrameSentOneByteARecordIsStillDecoded() throws {
        // Twelve TLS records of one byte each: the frame is put together across
        // as many reads before the daemon judges it.
        let stacks = try TwoStacks()
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try runRawPeer(stacks.b, mode: "trickle")
        #expect(lines.contains("HELLO") && lines.last == "CLOSED", "\(lines)")
        #expect(stacks.b.logEventually(contains: "is not paired and sent a advert frame"), "\(stacks.logs)")
        try stillServes(stacks)
    }

    @Test func aFrameOverTheCapIsDisconnected() throws {
        let stacks = try TwoStacks()
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try runRawPeer(stacks.b, mode: "oversize")
        #expect(lines.contains("HELLO") && lines.last == "CLOSED", "\(lines)")
        #expect(stacks.b.logEventually(contains: "over the limit"), "\(stacks.logs)")
        try stillServes(stacks)
    }

    @Test func anUnknownFrameKindIsDisconnected() throws {
        let stacks = try TwoStacks()
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try runRawPeer(stacks.b, mode: "garbage")
        #expect(lines.contains("HELLO") && lines.last == "CLOSED", "\(lines)")
        #expect(stacks.b.logEventually(contains: "unknown frame kind 200"), "\(stacks.logs)")
        try stillServes(stacks)
    }

    @Test func tls12IsRefused() throws {
        let stacks = try TwoStacks()
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try runRawPeer(stacks.b, mode: "tls12")
        #expect(lines.first == "HANDSHAKE TLSv1.2" && !lines.contains("HELLO"), "\(lines)\n\(stacks.logs)")
        #expect(stacks.b.logEventually(contains: "below 1.3"), "\(stacks.logs)")
        #expect(lines.last == "CLOSED")
        try stillServes(stacks)
    }
}

@Suite("Handoff keepalive and stalled peers", .serialized)
struct LivenessTests {
    @Test func anIdlePairedLinkStaysUp() throws {
        // Longer than the 10 s connect timeout, shorter than three keepalives (45 s).
        let stacks = try TwoStacks()
        let (onA, _) = try stacks.pair()
        Thread.sleep(forTimeInterval: 12)
        #expect(try stacks.a.deviceProperties(onA)["Reachable"] == .boolean(true))
        #expect(!stacks.a.handoffLog.contains("closed:") && !stacks.b.handoffLog.contains("closed:"), "\(stacks.logs)")
    }

    @Test func aPeerStalledMidFrameTimesOut() throws {
        // Keepalive every second: a silent or stalled link is dropped after three.
        let stacks = try TwoStacks(keepaliveSeconds: 1)
        try stacks.b.set("Discoverable", .boolean(true))
        let lines = try HostilePeerTests().runRawPeer(stacks.b, mode: "stall")
        #expect(lines.contains("HELLO") && lines.last == "CLOSED", "\(lines)")
        #expect(stacks.b.logEventually(contains: "stalled in the middle of a frame"), "\(stacks.logs)")
    }

    @Test func aVanishedDeviceBecomesUnreachableAndItsActivityIsCleared() throws {
        // Keepalive every 4 s (gone after 12 s of silence): long enough that a
        // loaded machine does not drop the link before the peer is stopped.
        let stacks = try TwoStacks(appsA: [(UA.editor, [UA.editType])], appsB: [(UA.editor, [UA.editType])], keepaliveSeconds: 4)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Frozen"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == false }), "\(stacks.logs)")
        // SIGSTOP: the TCP connection stays open but nothing answers.
        stacks.a.handoffd?.signal(SIGSTOP)
        defer { stacks.a.handoffd?.signal(SIGCONT) }
        #expect(stacks.b.waitForDevice(onB, "Reachable", timeout: 90, { $0 == .boolean(false) }), "\(stacks.logs)")
        #expect(try stacks.b.deviceProperties(onB)["CurrentActivity"]?.stringVariantEntries?.isEmpty == true)
        #expect(stacks.b.logEventually(contains: "stopped answering"), "\(stacks.logs)")
    }

    /// Descriptors the process holds.
    func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    @Test func strangersThatNeverAuthenticateAreBoundedAndClosed() throws {
        let stack = try Stack("A")
        try stack.set("Enabled", .boolean(true))
        stack.killHandoffd()
        stack.extraEnvironment = ["USERACTIVITY_HANDOFF_HANDSHAKE_SECONDS": "2"]
        try stack.startHandoffd()
        #expect(waitUntil(timeout: 20) { stack.port > 0 })
        let pid = try #require(stack.handoffd?.pid)
        let before = openDescriptors(pid)
        let script = stack.session.root + "/idle-connections.py"
        try writeFileAtomically(script, contents: idleConnectionsScript, mode: 0o755)
        let flood = try stack.bus.spawn("/usr/bin/python3", [script, "\(stack.port)", "300"])
        defer { flood.terminate(grace: 0.5) }
        #expect(try flood.readLine(timeout: 30) == "OPENED 300")
        // At most 64 strangers are held at once (8 from one address), each for 2 s.
        let held = openDescriptors(pid) - before
        #expect(held <= 2 * 64, "\(held) descriptors more than before while 300 connections wait")
        #expect(try flood.readLine(timeout: 60) == "CLOSED 300", "\(stack.handoffLog.suffix(3000))")
        #expect(stack.handoffd?.waitForExit(timeout: 0.1) == nil)
        #expect((try? stack.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Peer", "Ping")) != nil)
        #expect(stack.logEventually(contains: "connections from 127.0.0.1 are still authenticating"), "\(stack.handoffLog.suffix(3000))")
    }
}
