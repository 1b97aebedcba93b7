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
/// (Python's ssl, the same bytes, the same loopback link, A's key)
/// measured in the same run; figures, not a gate:
/// `HANDOFF_MEASURE=1 swift test --filter FileTransferMeasurementTests`.
@Suite("Handoff document transfer measurements", .serialized, .enabled(if: ProcessInfo.processInfo.environment["HANDOFF_MEASURE"] == "1"))
struct FileTransferMeasurementTests {
    static let bytes = 256 << 20

    /// A bare TLS 1.3 pipe (Python's ssl, that is OpenSSL, 1 MiB reads and
    /// writes): prints the bytes read and the milliseconds from the client's
    /// connect to the server's end of file. (`openssl s_client` reading a
    /// file on stdin closes before sending it.)
    static let pipeScript = #"""
import socket, ssl, sys, time, threading
cert, key, path = sys.argv[1], sys.argv[2], sys.argv[3]
server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_context.minimum_version = ssl.TLSVersion.TLSv1_3
server_context.load_cert_chain(cert, key)
listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]
result = {}
def serve():
    connection, _ = listener.accept()
    tls = server_context.wrap_socket(connection, server_side=True)
    total = 0
    while True:
        chunk = tls.recv(1 << 20)
        if not chunk:
            break
        total += len(chunk)
    result["bytes"] = total
    result["end"] = time.monotonic()
thread = threading.Thread(target=serve)
thread.start()
client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
client_context.check_hostname = False
client_context.verify_mode = ssl.CERT_NONE
client_context.minimum_version = ssl.TLSVersion.TLSv1_3
start = time.monotonic()
tls = client_context.wrap_socket(socket.create_connection(("127.0.0.1", port)))
with open(path, "rb") as source:
    while True:
        block = source.read(1 << 20)
        if not block:
            break
        tls.sendall(block)
# Half-close, then wait: closing with the server's session tickets unread would reset the connection.
tls.shutdown(socket.SHUT_WR)
thread.join()
tls.close()
print("%d %.1f" % (result["bytes"], (result["end"] - start) * 1000))
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

    @Test func transferAgainstABareTLSPipe() throws {
        let stacks = try TwoStacks(appsA: [(UA.editor, [])])
        try stacks.b.session.writeDesktopEntry(appID: UA.editor, types: [], exec: "/bin/true %U", extraLines: ["MimeType=application/octet-stream;"])
        let (_, onB) = try stacks.pair()
        let path = stacks.a.session.home + "/Documents/large.bin"
        try FileManager.default.createDirectory(atPath: stacks.a.session.home + "/Documents", withIntermediateDirectories: true)
        let random = try runCommand("/bin/sh", ["-c", "head -c \(Self.bytes) /dev/urandom > '\(path)'"], environment: ProcessInfo.processInfo.environment, timeout: 120)
        #expect(random.exitCode == 0)

        // The baseline: the same bytes through a bare TLS 1.3 pipe on the same link, with A's key.
        let script = stacks.b.session.root + "/tls-pipe.py"
        try writeFileAtomically(script, contents: Self.pipeScript, mode: 0o755)
        let state = stacks.a.session.stateHome + "/useractivity/handoff/"
        let pipe = try runCommand("/usr/bin/python3", [script, state + "certificate.pem", state + "key.pem", path],
                                  environment: ProcessInfo.processInfo.environment, timeout: 300)
        let words = pipe.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(words.first == "\(Self.bytes)", "\(pipe.stdout) \(pipe.stderr)")
        let pipeMilliseconds = try #require(words.last.flatMap { Double($0) }, "\(pipe.stdout) \(pipe.stderr)")

        _ = try stacks.a.becomeCurrent(app: UA.editor, type: "org.example.UserActivity.open-document", [
            ("title", .string("large.bin")),
            ("user-info", .stringVariantDictionary([("uri", .string("file://" + path)), ("mime-type", .string("application/octet-stream"))])),
        ])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" } == true }))
        let before = (a: memory(stacks.a), b: memory(stacks.b))
        let start = now()
        _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])], timeout: 600_000)
        let transfer = now() - start
        let after = (a: memory(stacks.a), b: memory(stacks.b))
        let arrived = stacks.b.session.home + "/Downloads/Stack A/large.bin"
        var info = stat()
        #expect(stat(arrived, &info) == 0 && Int(info.st_size) == Self.bytes)

        let mib = Double(Self.bytes) / 1_048_576
        print(String(format: "MEASURE document of %.0f MiB: bare TLS 1.3 pipe %.0f ms (%.1f MiB/s); Continue to app launched with the copy %.0f ms (%.1f MiB/s); transfer/pipe throughput %.2f",
                     mib, pipeMilliseconds, mib / pipeMilliseconds * 1000, transfer, mib / transfer * 1000, pipeMilliseconds / transfer))
        print("MEASURE handoffd A VmRSS \(before.a.rss) → \(after.a.rss) kB (peak \(before.a.peak) → \(after.a.peak) kB); handoffd B VmRSS \(before.b.rss) → \(after.b.rss) kB (peak \(before.b.peak) → \(after.b.peak) kB)")

        // Adverts (BecomeCurrent on A until B's device signals it), idle and then during a second transfer of the file.
        let watcher = try AdvertTitleWatcher(busAddress: stacks.b.bus.address, devicePath: onB)
        defer { watcher.close() }
        func advert(_ title: String) throws -> Double {
            let start = now()
            _ = try stacks.a.becomeCurrent(app: UA.editor, type: "org.example.UserActivity.open-document", [
                ("title", .string(title)), ("user-info", .stringVariantDictionary([("uri", .string("file://" + stacks.a.session.home + "/Documents/notes.txt"))])),
            ])
            #expect(watcher.waitForTitle(title), "\(stacks.logs)")
            return now() - start
        }
        let idle = try (0..<100).map { try advert("idle \($0)") }
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: "org.example.UserActivity.open-document", [
            ("title", .string("large.bin")),
            ("user-info", .stringVariantDictionary([("uri", .string("file://" + path)), ("mime-type", .string("application/octet-stream"))])),
        ])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" && $0.1.unwrappedVariant == .string("large.bin") } == true }))
        let call = try stacks.b.callInBackground(onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        let downloads = stacks.b.session.home + "/Downloads/Stack A"
        // The fetch is over once bytes arrive; adverts from then on do not change what B continues.
        #expect(waitUntil(timeout: 60, interval: 0.001) {
            (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.contains { $0.contains(".part-") } == true
        })
        var busy: [Double] = []
        // At most 256 live activities per connection: 100 idle, up to 120 during the transfer.
        while call.value == nil && busy.count < 120 { busy.append(try advert("busy \(busy.count)")) }
        #expect(waitUntil(timeout: 120) { call.value != nil })
        #expect(call.value == "ok", "\(call.value ?? "-")")
        func p(_ values: [Double], _ q: Double) -> Double { values.sorted()[min(values.count - 1, Int(Double(values.count) * q))] }
        print(String(format: "MEASURE advert idle n=%d p50 %.3f ms p99 %.3f ms; during the transfer n=%d p50 %.3f ms p99 %.3f ms; p99 during/idle %.2f",
                     idle.count, p(idle, 0.5), p(idle, 0.99), busy.count, p(busy, 0.5), p(busy, 0.99), p(busy, 0.99) / p(idle, 0.99)))
    }
}
