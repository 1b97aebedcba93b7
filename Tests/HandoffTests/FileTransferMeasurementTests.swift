// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// A document brought along between two stacks, against a bare TLS 1.3 pipe
/// (Python's ssl, the same bytes, the same link, A's key) measured in the
/// same run: over loopback, and between two network namespaces over veth
/// (as root). Figures, not a gate:
/// `HANDOFF_MEASURE=1 swift test --filter FileTransferMeasurementTests`.
@Suite("Handoff document transfer measurements", .serialized, .enabled(if: ProcessInfo.processInfo.environment["HANDOFF_MEASURE"] == "1"))
struct FileTransferMeasurementTests {
    static let bytes = 256 << 20
    static let smallBytes = 10 << 20

    /// A bare TLS 1.3 pipe (Python's ssl, that is OpenSSL, 1 MiB reads and
    /// writes). `server CERT KEY HOST` prints `PORT <n>`, then, at end of
    /// file, `END <bytes> <monotonic s>`; `client HOST PORT FILE` prints
    /// `START <monotonic s>` taken before it connects. (`openssl s_client`
    /// reading a file on stdin closes before sending it.)
    static let pipeScript = #"""
import socket, ssl, sys, time
if sys.argv[1] == "server":
    cert, key, host = sys.argv[2], sys.argv[3], sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert, key)
    listener = socket.create_server((host, 0))
    print("PORT %d" % listener.getsockname()[1], flush=True)
    connection, _ = listener.accept()
    tls = context.wrap_socket(connection, server_side=True)
    total = 0
    while True:
        chunk = tls.recv(1 << 20)
        if not chunk:
            break
        total += len(chunk)
    end = time.monotonic()
    tls.close()
    print("END %d %.6f" % (total, end), flush=True)
else:
    host, port, path = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    start = time.monotonic()
    tls = context.wrap_socket(socket.create_connection((host, port)))
    with open(path, "rb") as source:
        while True:
            block = source.read(1 << 20)
            if not block:
                break
            tls.sendall(block)
    # Half-close, then read to the end: closing with the server's session tickets unread would reset the connection.
    tls.shutdown(socket.SHUT_WR)
    try:
        while tls.recv(1 << 16):
            pass
    except (ssl.SSLError, OSError):
        pass
    tls.close()
    print("START %.6f" % start, flush=True)
"""#

    func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }

    func memory(_ stack: Stack) -> (rss: Int, peak: Int) {
        guard let pid = stack.handoffd?.pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (-1, -1) }
        func field(_ key: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(key + ":") }?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
                .flatMap { Int($0) } ?? -1
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// The milliseconds the pipe takes for the file at `path`, server on B's side of the link, client on A's.
    func pipeMilliseconds(_ stacks: TwoStacks, veth: VethLink?, path: String, bytes: Int) throws -> Double {
        let script = stacks.b.session.root + "/tls-pipe.py"
        try writeFileAtomically(script, contents: Self.pipeScript, mode: 0o755)
        let state = stacks.a.session.stateHome + "/useractivity/handoff/"
        func command(_ index: Int, _ arguments: [String]) -> (String, [String]) {
            veth?.commandLine(in: index, "/usr/bin/python3", [script] + arguments) ?? ("/usr/bin/python3", [script] + arguments)
        }
        let (serverTool, serverArguments) = command(1, ["server", state + "certificate.pem", state + "key.pem", stacks.hostOfB])
        let server = try ChildProcess(executable: serverTool, arguments: serverArguments, environment: ["PATH": standardSearchPath],
                                      stdout: .capture, stderr: .capture)
        defer { server.terminate(grace: 0.5) }
        let port = try #require(try server.readLine(timeout: 30)?.split(separator: " ").last.map(String.init), "\(server.stderrText)")
        let (clientTool, clientArguments) = command(0, ["client", stacks.hostOfB, port, path])
        let client = try runCommand(clientTool, clientArguments, environment: ["PATH": standardSearchPath], timeout: 300)
        let end = try #require(try server.readLine(timeout: 300), "\(server.stderrText)").split(separator: " ")
        let start = client.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).last.flatMap { Double(String($0)) }
        #expect(end.count == 3 && end[1] == "\(bytes)", "\(end) \(client)")
        let finish = try #require(end.last.flatMap { Double($0) })
        return (finish - (try #require(start, "\(client)"))) * 1000
    }

    func publish(_ stacks: TwoStacks, onB: String, path: String, title: String) throws {
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: "org.example.UserActivity.open-document", [
            ("title", .string(title)),
            ("user-info", .stringVariantDictionary([("uri", .string("file://" + path)), ("mime-type", .string("application/octet-stream"))])),
        ])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" && $0.1.unwrappedVariant == .string(title) } == true }))
    }

    /// CPU time (user + system, all threads) of a stack's handoffd so far, in milliseconds.
    func cpuMilliseconds(_ stack: Stack) -> Double {
        guard let pid = stack.handoffd?.pid, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return -1 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return -1 }
        return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("Over loopback") func overLoopback() throws { try measure(veth: nil, label: "loopback") }

    @Test("Between two network namespaces over veth", .enabled(if: VethLink.skipReason == nil, "\(VethLink.skipReason ?? "")"))
    func overVeth() throws {
        let veth = try VethLink()
        defer { veth.tearDown() }
        try measure(veth: veth, label: "veth")
    }

    func measure(veth: VethLink?, label: String) throws {
        let stacks = try TwoStacks(appsA: [(UA.editor, [])], veth: veth)
        try stacks.b.session.writeDesktopEntry(appID: UA.editor, types: [], exec: "/bin/true %U", extraLines: ["MimeType=application/octet-stream;"])
        let (_, onB) = try stacks.pair()
        let documents = stacks.a.session.home + "/Documents"
        let path = documents + "/large.bin", smallPath = documents + "/small.bin"
        try FileManager.default.createDirectory(atPath: documents, withIntermediateDirectories: true)
        let random = try runCommand("/bin/sh", ["-c", "head -c \(Self.bytes) /dev/urandom > '\(path)' && head -c \(Self.smallBytes) '\(path)' > '\(smallPath)'"],
                                    environment: ProcessInfo.processInfo.environment, timeout: 120)
        #expect(random.exitCode == 0)

        // The baseline: the same bytes through a bare TLS 1.3 pipe on the same link, with A's key.
        let pipe = try pipeMilliseconds(stacks, veth: veth, path: path, bytes: Self.bytes)

        try publish(stacks, onB: onB, path: path, title: "large.bin")
        let before = (a: memory(stacks.a), b: memory(stacks.b))
        let cpuBefore = (a: cpuMilliseconds(stacks.a), b: cpuMilliseconds(stacks.b))
        let start = now()
        _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])], timeout: 600_000)
        let transfer = now() - start
        let after = (a: memory(stacks.a), b: memory(stacks.b))
        let cpu = (a: cpuMilliseconds(stacks.a) - cpuBefore.a, b: cpuMilliseconds(stacks.b) - cpuBefore.b)
        let arrived = stacks.b.session.home + "/Downloads/Stack A/large.bin"
        var info = stat()
        #expect(stat(arrived, &info) == 0 && Int(info.st_size) == Self.bytes)

        let mib = Double(Self.bytes) / 1_048_576
        print(String(format: "MEASURE [%@] document of %.0f MiB: bare TLS 1.3 pipe %.0f ms (%.1f MiB/s); Continue to app launched with the copy %.0f ms (%.1f MiB/s); transfer/pipe throughput %.2f",
                     label, mib, pipe, mib / pipe * 1000, transfer, mib / transfer * 1000, pipe / transfer))
        print("MEASURE [\(label)] handoffd A VmRSS \(before.a.rss) → \(after.a.rss) kB (peak \(before.a.peak) → \(after.a.peak) kB); handoffd B VmRSS \(before.b.rss) → \(after.b.rss) kB (peak \(before.b.peak) → \(after.b.peak) kB); CPU time A \(Int(cpu.a)) ms, B \(Int(cpu.b)) ms")

        // 10 MiB: B's Continue until the app is launched with the copy, against the pipe
        // for the same file plus a local continue of the copy already on B (five each, medians).
        let smallOnB = stacks.b.session.home + "/small-local.bin"
        try FileManager.default.copyItem(atPath: smallPath, toPath: smallOnB)
        var pipes: [Double] = [], locals: [Double] = [], remotes: [Double] = []
        for round in 0..<5 {
            pipes.append(try pipeMilliseconds(stacks, veth: veth, path: smallPath, bytes: Self.smallBytes))
            let localStart = now()
            _ = try stacks.b.call(UA.busName, UA.managerPath, UA.managerInterface, "ContinueActivity", [
                .string("org.example.UserActivity.open-document"),
                .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string("small.bin")),
                                          ("user-info", .stringVariantDictionary([("uri", .string("file://" + smallOnB)), ("mime-type", .string("application/octet-stream"))]))]),
                .stringVariantDictionary([]),
            ])
            locals.append(now() - localStart)
            try publish(stacks, onB: onB, path: smallPath, title: "small \(round)")
            let remoteStart = now()
            _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])], timeout: 120_000)
            remotes.append(now() - remoteStart)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print(String(format: "MEASURE [%@] 10 MiB document: Continue to app launched %.0f ms (median of %d: %@); pipe %.0f ms + local continue %.0f ms = %.0f ms; ratio %.2f",
                     label, median(remotes), remotes.count, remotes.map { String(format: "%.0f", $0) }.joined(separator: "/"),
                     median(pipes), median(locals), median(pipes) + median(locals), median(remotes) / (median(pipes) + median(locals))))

        // Adverts (BecomeCurrent on A until B's device signals it), idle and then during a second transfer of the file.
        let watcher = try AdvertTitleWatcher(busAddress: stacks.b.bus.address, devicePath: onB)
        defer { watcher.close() }
        func advert(_ title: String) throws -> Double {
            // After a quiet spell: one within 250 ms of the last one shown waits for its turn.
            Thread.sleep(forTimeInterval: 0.26)
            let start = now()
            _ = try stacks.a.becomeCurrent(app: UA.editor, type: "org.example.UserActivity.open-document", [
                ("title", .string(title)), ("user-info", .stringVariantDictionary([("uri", .string("file://" + stacks.a.session.home + "/Documents/notes.txt"))])),
            ])
            #expect(watcher.waitForTitle(title), "\(stacks.logs)")
            return now() - start
        }
        let idle = try (0..<100).map { try advert("idle \($0)") }
        try publish(stacks, onB: onB, path: path, title: "large.bin")
        let call = try stacks.b.callInBackground(onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        let downloads = stacks.b.session.home + "/Downloads/Stack A"
        // The fetch is over once bytes arrive; adverts from then on do not change what B continues.
        #expect(waitUntil(timeout: 60, interval: 0.001) {
            (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.contains { $0.contains(".part-") } == true
        })
        var busy: [Double] = []
        // At most 256 live activities per connection: 100 idle, 10 small documents, up to 120 during the transfer.
        while call.value == nil && busy.count < 120 { busy.append(try advert("busy \(busy.count)")) }
        #expect(waitUntil(timeout: 120) { call.value != nil })
        #expect(call.value == "ok", "\(call.value ?? "-")")
        func p(_ values: [Double], _ q: Double) -> Double { values.sorted()[min(values.count - 1, Int(Double(values.count) * q))] }
        print(String(format: "MEASURE [%@] advert idle n=%d p50 %.3f ms p99 %.3f ms; during the transfer n=%d p50 %.3f ms p99 %.3f ms; p99 during/idle %.2f",
                     label, idle.count, p(idle, 0.5), p(idle, 0.99), busy.count, p(busy, 0.5), p(busy, 0.99), p(busy, 0.99) / p(idle, 0.99)))
    }
}
