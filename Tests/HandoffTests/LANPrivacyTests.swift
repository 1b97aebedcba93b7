// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HandoffCore
import TestSupport
import Testing
import TypedValues

/// What a stranger on the network learns from a device that is not
/// Discoverable, over loopback (the DNS-SD half is in DiscoveryTests'
/// `LANPrivacyTests`).
@Suite("Handoff shows strangers nothing stable", .serialized)
struct LANPrivacyTests {
    func probe(_ stack: Stack, sending frame: Frame? = nil, handshakeOnly: Bool = false) throws -> StrangerTLSProbe.Sighting {
        let probe = try StrangerTLSProbe.prepare(in: stack.session.root, environment: stack.bus.environment)
        var arguments = [probe.script, "127.0.0.1", "\(stack.port)", probe.cert, probe.key]
        if let frame { arguments.append(FrameCodec.encode(frame).map { String(format: "%02x", $0) }.joined()) }
        if handshakeOnly { arguments.append("none") }
        let process = try stack.bus.spawn("/usr/bin/python3", arguments)
        defer { process.terminate(grace: 0.5) }
        return try StrangerTLSProbe.read(process)
    }

    func restart(_ stack: Stack) throws {
        stack.killHandoffd()
        try stack.startHandoffd()
    }

    func expectReconnected(_ stacks: TwoStacks, _ onA: String, _ onB: String, _ context: String) {
        #expect(stacks.a.waitForDevice(onA, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(context)\n\(stacks.logs)")
        #expect(stacks.b.waitForDevice(onB, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(context)\n\(stacks.logs)")
        #expect((try? stacks.a.deviceProperties(onA)["Paired"]) == .boolean(true))
    }

    @Test func aStrangerGetsAThrowawayCertificateAndNoAnswerWhilePairedDevicesStillMeet() throws {
        let stacks = try TwoStacks(appsA: [(UA.editor, [UA.editType])], appsB: [(UA.editor, [UA.editType])])
        let (onA, onB) = try stacks.pair()
        let idA = stacks.a.deviceID, idB = stacks.b.deviceID
        // While Discoverable (B, for the pairing above) the long-lived key is what pairing pins: the probe sees it.
        let open = try probe(stacks.b, handshakeOnly: true)
        #expect(open.spki == idB, "\(open)")
        try stacks.b.set("Discoverable", .boolean(false))

        let first = try probe(stacks.a)
        #expect(first.spki.count == 64 && first.spki != idA, "\(first)")
        #expect(!first.der.contains(idA) && !first.subject.contains("Stack"), "\(first)")
        #expect(first.received == 0, "a stranger was answered: \(first)\n\(stacks.logs)")
        // A proof made with a secret it does not have gets nothing either.
        let forged = try probe(stacks.a, sending: Frame(.proof, ["mac": .bytes(SecureRandom.bytes(32))]))
        #expect(forged.received == 0 && forged.spki != idA, "\(forged)")
        #expect(stacks.a.logEventually(contains: "did not prove it is a paired device"), "\(stacks.logs)")

        // B restarts on a new port: it reaches A at A's address without showing its key, by the pair's secret.
        try restart(stacks.b)
        expectReconnected(stacks, onA, onB, "after B restarted")
        #expect(stacks.b.logEventually(contains: "proving") || stacks.a.logEventually(contains: "proved it is"), "\(stacks.logs)")
        let fromB = try probe(stacks.b)
        #expect(fromB.spki != idB && fromB.spki != first.spki && fromB.received == 0, "\(fromB)")

        // A restarts on a new port: a new certificate for strangers, and A finds B again the same way.
        try restart(stacks.a)
        expectReconnected(stacks, onA, onB, "after A restarted")
        let second = try probe(stacks.a)
        #expect(second.spki != first.spki && second.der != first.der && second.spki != idA, "\(first)\n\(second)")
        #expect(second.received == 0, "\(second)")

        // And the link is a paired one: an advert from A arrives on B.
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("After the restarts"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.1 == .string("After the restarts") } == true }),
                "\(stacks.logs)")
    }

    /// Both state files without the secrets, as a pair made before devices exchanged them.
    func forgetSecrets(_ stack: Stack) throws {
        let path = stack.session.stateHome + "/useractivity/handoff/peers.ini"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("LinkSecret=") && !$0.hasPrefix("ResolvingKey=") }
        try writeFileAtomically(path, contents: kept.joined(separator: "\n"), mode: 0o600)
    }

    /// A free loopback port, so that B comes back where A last saw it.
    func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw HandoffTestFailure("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test func aPairFromBeforeTheSecretsGetsThemInThePairingWindow() throws {
        let placement = HandoffStack.Placement(listen: "127.0.0.1:\(try freePort())", systemBusAddress: nil) { executable, arguments, environment in
            try ChildProcess(executable: executable, arguments: arguments, environment: environment, stdout: .capture, stderr: .capture)
        }
        let stacks = try TwoStacks(placementB: placement)
        let (onA, onB) = try stacks.pair()
        try stacks.b.set("Discoverable", .boolean(false))
        stacks.a.killHandoffd()
        stacks.b.killHandoffd()
        try forgetSecrets(stacks.a)
        try forgetSecrets(stacks.b)
        try stacks.a.startHandoffd()
        try stacks.b.startHandoffd()
        // Neither shows its key to a device that has not proved itself, and neither can prove: they stay apart.
        #expect(stacks.a.logEventually(contains: "TLS handshake") && stacks.b.logEventually(contains: "TLS handshake"), "\(stacks.logs)")
        #expect((try? stacks.a.deviceProperties(onA)["Reachable"]) == .boolean(false), "\(stacks.logs)")
        // B opens its pairing window: the pinned keys meet, and the secrets are exchanged.
        try stacks.b.set("Discoverable", .boolean(true))
        expectReconnected(stacks, onA, onB, "in B's pairing window")
        #expect(stacks.a.logEventually(contains: "giving") || stacks.b.logEventually(contains: "giving"), "\(stacks.logs)")
        #expect(waitUntil(timeout: 30) {
            let files = [stacks.a, stacks.b].map { (try? String(contentsOfFile: $0.session.stateHome + "/useractivity/handoff/peers.ini", encoding: .utf8)) ?? "" }
            return files.allSatisfy { $0.contains("LinkSecret=") && $0.components(separatedBy: "ResolvingKey=").count == 3 }
        }, "\(stacks.logs)")
        // From now on they meet without the window.
        try stacks.b.set("Discoverable", .boolean(false))
        try restart(stacks.b)
        expectReconnected(stacks, onA, onB, "after the window closed and B restarted")
    }
}
