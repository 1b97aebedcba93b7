// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Figures for the report, not a benchmark gate: run with
/// `HANDOFF_MEASURE=1 swift test --filter MeasurementTests` (bench/report.sh
/// runs it against the packaged release daemons). Each figure comes with its
/// baseline from the same run: a local Ping to handoffd, interleaved with the
/// adverts, for the latencies; useractivityd and dbus-daemon of the same
/// stack for the resident size. Each figure must still come out, so a broken
/// path fails the run.
@Suite("Handoff measurements", .serialized, .enabled(if: ProcessInfo.processInfo.environment["HANDOFF_MEASURE"] == "1"))
struct MeasurementTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }

    func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    func report(_ name: String, _ values: [Double]) {
        print(String(format: "MEASURE %@: n=%d p50=%.3f ms p90=%.3f ms p99=%.3f ms", name, values.count,
                     percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99)))
    }

    /// VmRSS, RssAnon and RssFile of a process, in kB, as one MEASURE line.
    func reportMemory(_ name: String, pid: pid_t) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            Issue.record("no /proc/\(pid)/status for \(name)")
            return
        }
        func field(_ key: String) -> String {
            status.split(separator: "\n").first { $0.hasPrefix(key + ":") }?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
                .map(String.init) ?? "?"
        }
        print("MEASURE rss \(name): VmRSS=\(field("VmRSS")) kB RssAnon=\(field("RssAnon")) kB RssFile=\(field("RssFile")) kB")
    }

    @Test func figures() throws {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let (_, onB) = try stacks.pair()

        // Local Ping round trip to handoffd (answered by libdbus in the daemon),
        // timed once before each advert so both see the same load.
        func ping() throws -> Double {
            let start = now()
            _ = try stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Peer", "Ping")
            return now() - start
        }
        for _ in 0..<50 { _ = try ping() }
        var pings: [Double] = []

        // Advert latency: BecomeCurrent on A until B's device emits the new CurrentActivity.
        let watcher = try AdvertTitleWatcher(busAddress: stacks.b.bus.address, devicePath: onB)
        defer { watcher.close() }
        var adverts: [Double] = []
        for index in 0..<200 {
            pings.append(try ping())
            // After a quiet spell, as when a person switches activity: one
            // within 250 ms of the last one shown waits for its turn.
            Thread.sleep(forTimeInterval: 0.26)
            let title = "advert \(index)"
            let start = now()
            _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string(title))])
            let seen = watcher.waitForTitle(title)
            #expect(seen, "\(stacks.logs)")
            adverts.append(now() - start)
        }
        report("local Peer.Ping to useractivity-handoffd", pings)
        report("advert: BecomeCurrent on A → CurrentActivity on B", adverts)

        // Continue: local ContinueActivity on A vs Device.ContinueActivity on B, each into a registered handler.
        let handlerA = try HandlerFixture.start(app: UA.editor, bus: stacks.a.bus, directory: stacks.a.session.root)
        let handlerB = try HandlerFixture.start(app: UA.editor, bus: stacks.b.bus, directory: stacks.b.session.root)
        defer { handlerA.terminate(grace: 0.5); handlerB.terminate(grace: 0.5) }
        let empty = TypedValue.dictionary(keyType: "s", valueType: "v", [])
        var local: [Double] = []
        var remote: [Double] = []
        for _ in 0..<60 {
            var start = now()
            _ = try stacks.a.call(UA.busName, UA.managerPath, UA.managerInterface, "ContinueActivity", [
                .string(UA.editType), .dictionary(keyType: "s", valueType: "v", [
                    .init(key: .string("app-id"), value: .variant(.string(UA.editor))), .init(key: .string("title"), value: .variant(.string("local"))),
                ]), empty,
            ])
            local.append(now() - start)
            _ = try handlerA.readLine(timeout: 10)
            start = now()
            _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [empty])
            remote.append(now() - start)
            _ = try handlerB.readLine(timeout: 10)
        }
        report("ContinueActivity on the local useractivityd", local)
        report("Device.ContinueActivity from the other stack (fetch + local continue + Continued)", remote)

        // TLS: TCP connect + mutual TLS 1.3 handshake + the daemon's first frame, from a Python client.
        try stacks.b.set("Discoverable", .boolean(true))
        let root = stacks.b.session.root
        let keygen = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                         "-keyout", root + "/m-key.pem", "-out", root + "/m-cert.pem", "-subj", "/CN=m", "-days", "1"],
                                    environment: stacks.b.bus.environment)
        #expect(keygen.exitCode == 0)
        try writeFileAtomically(root + "/handshake.py", contents: #"""
            import socket, ssl, struct, sys, time
            port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.load_cert_chain(cert, key)
            for _ in range(30):
                start = time.monotonic()
                tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port)))
                tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                header = tls.recv(4)
                length = struct.unpack(">I", header)[0]
                got = 0
                while got < length:
                    got += len(tls.recv(length - got))
                print("%.3f" % ((time.monotonic() - start) * 1000), flush=True)
                tls.close()
            """#, mode: 0o755)
        let timing = try runCommand("/usr/bin/python3", [root + "/handshake.py", "\(stacks.b.port)", root + "/m-cert.pem", root + "/m-key.pem"],
                                    environment: stacks.b.bus.environment)
        let handshakes = timing.stdout.split(separator: "\n").compactMap { Double($0) }
        #expect(handshakes.count == 30, "\(timing.stderr)")
        if !handshakes.isEmpty { report("TCP + mutual TLS 1.3 handshake + first frame (Python client)", handshakes) }

        // Idle resident size of handoffd (enabled, paired, one link up, after
        // the work above), against useractivityd and dbus-daemon of the same stack.
        Thread.sleep(forTimeInterval: 2)
        let handoffd = try #require(stacks.a.handoffd?.pid)
        reportMemory("useractivity-handoffd", pid: handoffd)
        let useractivityd = try #require(stacks.a.client.callBus("GetConnectionUnixProcessID", [.string(UA.busName)]).first?.uint32Value)
        reportMemory("useractivityd", pid: pid_t(useractivityd))
        reportMemory("dbus-daemon", pid: stacks.a.bus.pid)
    }
}
