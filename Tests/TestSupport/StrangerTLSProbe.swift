// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A TLS client with a key nobody paired (made by openssl) that reports
/// what a handoff daemon shows a stranger: the certificate (its SPKI
/// SHA-256, its subject, its DER in hex), then sends one frame (hex, by
/// default an empty hello; `none` to stop after the handshake) and counts the bytes it gets back before the
/// daemon closes. Lines: `SPKI <hex>`, `SUBJECT <text>`, `DER <hex>`,
/// `RECEIVED <n>`, `CLOSED`; `FAILED <reason>` when no TLS 1.3 session came up.
public enum StrangerTLSProbe {
    public static let script = #"""
    import socket, ssl, struct, subprocess, sys, hashlib
    host, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    send = sys.argv[5] if len(sys.argv) > 5 else "0000000801017b0173017600"

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.load_cert_chain(cert, key)
    try:
        tls = context.wrap_socket(socket.create_connection((host, port), timeout=30))
    except (OSError, ssl.SSLError) as error:
        print("FAILED %s" % error, flush=True)
        sys.exit(0)
    der = tls.getpeercert(binary_form=True)
    pem = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-pubkey"], input=der, capture_output=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pem, capture_output=True).stdout
    subject = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"], input=der, capture_output=True).stdout
    print("SPKI " + hashlib.sha256(spki).hexdigest(), flush=True)
    print("SUBJECT " + subject.decode().strip(), flush=True)
    print("DER " + der.hex(), flush=True)
    if send == "none":
        print("CLOSED", flush=True)
        sys.exit(0)
    received = 0
    try:
        tls.sendall(bytes.fromhex(send))
        while True:
            chunk = tls.recv(4096)
            if not chunk:
                break
            received += len(chunk)
    except (OSError, ssl.SSLError):
        pass
    print("RECEIVED %d" % received, flush=True)
    print("CLOSED", flush=True)
    """#

    /// What the probe saw.
    public struct Sighting: Sendable, CustomStringConvertible {
        public var spki = ""
        public var subject = ""
        public var der = ""
        public var received = -1
        public var lines: [String] = []
        public var description: String { lines.joined(separator: "\n") }
    }

    /// Makes the probe's own key and script in `directory`; returns the arguments before host and port.
    public static func prepare(in directory: String, environment: [String: String]) throws -> (script: String, cert: String, key: String) {
        let key = directory + "/stranger-key.pem", cert = directory + "/stranger-cert.pem"
        let result = try runCommand("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                         "-keyout", key, "-out", cert, "-subj", "/CN=stranger", "-days", "1"], environment: environment)
        guard result.exitCode == 0 else { throw HandoffTestFailure("openssl failed: \(result.stderr)") }
        let script = directory + "/stranger-probe.py"
        try writeFileAtomically(script, contents: Self.script, mode: 0o755)
        return (script, cert, key)
    }

    /// Reads the probe's lines until it ends.
    public static func read(_ process: ChildProcess) throws -> Sighting {
        var sighting = Sighting()
        while let line = try process.readLine(timeout: 60) {
            sighting.lines.append(line)
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            switch parts.first {
            case "SPKI": sighting.spki = parts.count > 1 ? parts[1] : ""
            case "SUBJECT": sighting.subject = parts.count > 1 ? parts[1] : ""
            case "DER": sighting.der = parts.count > 1 ? parts[1] : ""
            case "RECEIVED": sighting.received = Int(parts.count > 1 ? parts[1] : "") ?? -1
            default: break
            }
            if line == "CLOSED" || line.hasPrefix("FAILED") { break }
        }
        return sighting
    }
}
