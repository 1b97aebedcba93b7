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
        // Nobody here could pair: a device that calls itself discoverable is not shown this device's key.
        #expect(DiscoveryDecision.action(for: open, ownID: me, paired: [], reachable: [], mayPair: false) == .ignore)
        #expect(DiscoveryDecision.action(for: open, ownID: me, paired: [peer], reachable: [], mayPair: false) == .dial(address: "[fe80::1]:4000"))
    }

    @Test func ignoresItselfAndMalformedAnnouncements() {
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 1, txt: ["id": me, "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 1, txt: ["id": "NOTHEX", "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
        #expect(DiscoveryDecision.action(for: .init(host: "h", port: 0, txt: ["id": peer, "name": "x"]), ownID: me, paired: [], reachable: []) == .ignore)
    }

    @Test func theNameAndIdArePublishedOnlyWhileDiscoverable() {
        let token = ResolvableToken.make(resolvingKey: SecureRandom.bytes(32))
        #expect(DiscoveryDecision.txt(deviceID: me, name: "Laptop", discoverable: false, token: token) == ["r": token])
        #expect(DiscoveryDecision.txt(deviceID: me, name: "Laptop", discoverable: true, token: token) == ["id": me, "name": "Laptop"])
    }

    @Test func aTokenNamesADeviceOnlyOnceResolved() {
        let key = SecureRandom.bytes(32)
        var found = DiscoveryDecision.Found(host: "192.0.2.9", port: 4000, txt: ["r": ResolvableToken.make(resolvingKey: key)])
        #expect(found.deviceID == nil && found.token != nil)
        #expect(DiscoveryDecision.action(for: found, ownID: me, paired: [peer], reachable: []) == .ignore)
        found.resolvedID = ResolvableToken.resolve(found.token!, candidates: [(me, SecureRandom.bytes(32)), (peer, key)])
        #expect(found.deviceID == peer)
        #expect(DiscoveryDecision.action(for: found, ownID: me, paired: [peer], reachable: []) == .dial(address: "192.0.2.9:4000"))
        #expect(DiscoveryDecision.Found(host: "h", port: 1, txt: ["r": "not-a-token"]).token == nil)
    }
}
