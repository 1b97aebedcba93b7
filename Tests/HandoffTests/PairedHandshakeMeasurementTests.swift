// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

/// A paired device (B's key and secrets, B's daemon stopped) connecting to
/// A until the link is up, 40 times each way it can: `pinned` shows B's
/// long-lived key in the handshake and waits for A's hello; `proof` shows a
/// throwaway key, proves the pair's secret over the TLS exporter, checks
/// A's answer and waits for A's hello (only when B holds a link secret).
/// Prints `<scheme> <ms>` per connection.
let pairedHandshakeScript = #"""
import hashlib, hmac, os, socket, struct, subprocess, sys, time
from OpenSSL import SSL
port, scheme, cert, key, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], bytes.fromhex(sys.argv[5])
def frame_with_mac(kind, mac):
    body = bytes([1]) + b"{" + b"\x01s\x01v\x01" + b"s\x03mac" + b"va\x01y" + bytes([len(mac)]) + b"".join(b"y" + bytes([b]) for b in mac)
    return struct.pack(">I", len(body) + 1) + bytes([kind]) + body
def connect(cert, key):
    context = SSL.Context(SSL.TLS_METHOD)
    context.set_min_proto_version(SSL.TLS1_3_VERSION)
    context.use_certificate_file(cert)
    context.use_privatekey_file(key)
    context.set_verify(SSL.VERIFY_NONE, lambda *args: True)
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tls = SSL.Connection(context, raw)
    tls.set_connect_state()
    tls.do_handshake()
    return tls
def read_frame(tls):
    data = b""
    while len(data) < 4:
        data += tls.recv(4 - len(data))
    length = struct.unpack(">I", data)[0]
    body = b""
    while len(body) < length:
        body += tls.recv(length - len(body))
    return body
for _ in range(40):
    start = time.monotonic()
    if scheme == "pinned":
        tls = connect(cert, key)
        kind = read_frame(tls)[0]
        assert kind == 1, kind
    else:
        tls = connect(cert, key)
        binding = tls.export_keying_material(b"EXPORTER-Channel-Binding", 32)
        tls.sendall(frame_with_mac(22, hmac.new(secret, b"useractivity-handoff-proof-client-v1\0" + binding, hashlib.sha256).digest()))
        answer = read_frame(tls)
        assert answer[0] == 23, answer[0]
        expected = hmac.new(secret, b"useractivity-handoff-proof-server-v1\0" + binding, hashlib.sha256).digest()
        assert answer[-64:][1::2] == expected, "the server's proof does not match"
        kind = read_frame(tls)[0]
        assert kind == 1, kind
    print("%s %.3f" % (scheme, (time.monotonic() - start) * 1000), flush=True)
    tls.shutdown()
    tls.close()
"""#

/// The figure of docs/benchmarks.md "Paired handshake": `bench/paired-handshake.sh`
/// runs this suite against two builds of handoffd in one run.
@Suite("Paired handshake measurement", .serialized, .enabled(if: ProcessInfo.processInfo.environment["HANDOFF_MEASURE"] == "1"))
struct PairedHandshakeMeasurementTests {
    func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    @Test func pairedDeviceConnectsUntilTheLinkIsUp() throws {
        let stacks = try TwoStacks()
        _ = try stacks.pair()
        try stacks.b.set("Discoverable", .boolean(false))
        let idA = stacks.a.deviceID
        // Daemon to daemon: B turned off and on dials A; B's log says how long its link took from
        // the dial to A's hello (TCP, TLS, the proof when there is one).
        let upLine = "(client, 127.0.0.1:\(stacks.a.port)) up after "
        func upTimes() -> [Double] {
            stacks.b.handoffLog.split(separator: "\n").compactMap { line in
                guard let range = line.range(of: upLine) else { return nil }
                return Double(line[range.upperBound...].split(separator: " ").first ?? "")
            }
        }
        for _ in 0..<30 {
            let before = upTimes().count
            try stacks.b.set("Enabled", .boolean(false))
            try stacks.b.set("Enabled", .boolean(true))
            #expect(waitUntil(timeout: 30) { upTimes().count > before }, "\(stacks.logs)")
        }
        let daemonToDaemon = Array(upTimes().suffix(30))
        if daemonToDaemon.count == 30 {
            print(String(format: "MEASURE paired handshake daemon: n=%d p50=%.3f ms p90=%.3f ms p99=%.3f ms", daemonToDaemon.count,
                         percentile(daemonToDaemon, 0.5), percentile(daemonToDaemon, 0.9), percentile(daemonToDaemon, 0.99)))
        }
        let state = stacks.b.session.stateHome + "/useractivity/handoff/"
        stacks.b.killHandoffd()
        // B's secret for A, when this build exchanges one.
        let peers = try String(contentsOfFile: state + "peers.ini", encoding: .utf8)
        var secret = "", inA = false
        for line in peers.split(separator: "\n") {
            if line.hasPrefix("[") { inA = line == "[Device \(idA)]" }
            if inA && line.hasPrefix("LinkSecret=") { secret = String(line.dropFirst("LinkSecret=".count)) }
        }
        let root = stacks.b.session.root
        try writeFileAtomically(root + "/paired-handshake.py", contents: pairedHandshakeScript, mode: 0o755)
        let keygen = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                         "-keyout", root + "/throwaway-key.pem", "-out", root + "/throwaway-cert.pem", "-subj", "/CN=x", "-days", "1"],
                                    environment: stacks.b.bus.environment)
        #expect(keygen.exitCode == 0)
        var schemes = [("pinned", state + "certificate.pem", state + "key.pem")]
        if !secret.isEmpty { schemes.append(("proof", root + "/throwaway-cert.pem", root + "/throwaway-key.pem")) }
        for (scheme, cert, key) in schemes {
            let run = try runCommand("/usr/bin/python3", [root + "/paired-handshake.py", "\(stacks.a.port)", scheme, cert, key, secret.isEmpty ? "00" : secret],
                                     environment: stacks.b.bus.environment, timeout: 120)
            let values = run.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            #expect(values.count == 40, "\(scheme): \(run.stdout)\n\(run.stderr)\n\(stacks.logs)")
            guard !values.isEmpty else { continue }
            print(String(format: "MEASURE paired handshake %@: n=%d p50=%.3f ms p90=%.3f ms p99=%.3f ms", scheme, values.count,
                         percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99)))
        }
    }
}
