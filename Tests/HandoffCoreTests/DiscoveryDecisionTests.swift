// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing

@Suite struct DiscoveryDecisionTests {
    let me = Hex.encode(SHA256.hash([0]))
    let peer = Hex.encode(SHA256.hash([1]))

    @Test func dialsAPairedDeviceThatCameBackAtItsNewAddress() {
        let found = DiscoveryDecision.Found(host: "192.0.2.9", port: 4000, txt: ["id": peer])
        #expect(DiscoveryDecision.action(for: found, ownID: me, paired: [peer], reachable: []) == .dial(address: "192.0.2.9:4000"))
        #expect(DiscoveryDecision.action(for: found, ownID: me, paired: [peer], reachable: [peer]) == .ignore)
    }

    @Test func dialsAnUnknownDeviceOnlyWhileItIsDiscoverable() {
        let quiet = DiscoveryDecision.Found(host: "fe80::1", port: 4000, txt: ["id": peer])
        #expect(DiscoveryDecision.action(for: quiet, ownID: me, paired: [], reachable: []) == .ignore)
        var open = quiet
        open.txt["name"] = "Desk"
        #expect(DiscoveryDecision.action(for: open, ownID: me, paired: [], reachable: []) == .dial(address: "[fe80::1]:4000"))
    }

    @Test func ignoresItselfAndMalformedAnnouncements() {
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 1, txt: ["id": me, "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 1, txt: ["id": "NOTHEX", "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 0, txt: ["id": peer, "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
    }

    @Test func theNameIsPublishedOnlyWhileDiscoverable() {
        #expect(DiscoveryDecision.txt(deviceID: me, name: "Laptop", discoverable: false) == ["id": me])
        #expect(DiscoveryDecision.txt(deviceID: me, name: "Laptop", discoverable: true) == ["id": me, "name": "Laptop"])
    }
}
