// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
@testable import useractivity_handoffd

/// Two paired devices that meet outside the pairing window: neither shows
/// its long-lived key; the one that dials proves the pair's secret over the
/// TLS exporter, the other answers with its own proof.
@Suite(.serialized) struct LinkProofTests {
    /// Makes `a` and `b` paired with these secrets (as pairing would have) and returns b's object for a.
    @discardableResult
    func pair(_ a: DeviceUnderTest, _ b: DeviceUnderTest, secretOnA: [UInt8], secretOnB: [UInt8]) -> DeviceObject {
        var objectForA: DeviceObject!
        for (here, there, secret) in [(a, b, secretOnA), (b, a, secretOnB)] {
            let object = DeviceObject(id: there.id)
            object.paired = true
            object.address = there.address
            here.context.devices[there.id] = object
            here.context.state.devices[there.id] = KnownDevice(id: there.id, address: there.address, paired: true, linkSecret: secret,
                                                               resolvingKey: SecureRandom.bytes(32))
            if here === b { objectForA = object }
        }
        return objectForA
    }

    @Test func pairedDevicesMeetByTheProofWithoutShowingTheirKeys() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            let secret = SecureRandom.bytes(32)
            let objectForA = pair(a, b, secretOnA: secret, secretOnB: secret)
            let link = try #require(b.links.dial(a.address, device: objectForA))
            #expect(link.provingTo == a.id)
            #expect(devices.spin { a.device(b)?.reachable == true && b.device(a)?.reachable == true })
            let serverSide = try #require(a.device(b)?.link)
            #expect(serverSide.showedEphemeralCertificate && serverSide.isProven && link.isProven)
            #expect(serverSide.peerDeviceID == b.id && link.peerDeviceID == a.id)
            #expect(serverSide.isPaired && link.isPaired)
        }
    }

    @Test func aWrongSecretGetsNoAnswerAndNoDevice() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            let objectForA = pair(a, b, secretOnA: SecureRandom.bytes(32), secretOnB: SecureRandom.bytes(32))
            b.links.dial(a.address, device: objectForA)
            #expect(devices.spin { b.links.links.isEmpty && a.links.links.isEmpty })
            #expect(a.device(b)?.reachable != true && b.device(a)?.reachable != true)
            #expect(b.closedLinks.contains { $0.contains("closed the connection") || $0.contains("failed") }, "\(b.closedLinks)")
        }
    }

    @Test func theProofAlsoWorksWhileTheOtherIsDiscoverable() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            let secret = SecureRandom.bytes(32)
            let objectForA = pair(a, b, secretOnA: secret, secretOnB: secret)
            // a shows its long-lived certificate and says hello at once; b still proves itself, ignoring that first hello.
            a.context.discoverableWindow.set(true, now: devices.scheduler.monotonic)
            let link = try #require(b.links.dial(a.address, device: objectForA))
            #expect(devices.spin { a.device(b)?.reachable == true && b.device(a)?.reachable == true })
            let serverSide = try #require(a.device(b)?.link)
            #expect(!serverSide.showedEphemeralCertificate && serverSide.isProven && link.isProven)
            // The throwaway key b showed left no device object behind on a.
            #expect(a.context.devices.count == 1)
        }
    }

    @Test func theTokenAndTheCertificateForStrangersAreReplacedEachInterval() throws {
        try TwoDevices.run { devices in
            let a = devices.a!
            let token = a.links.disguise.token, key = a.links.disguise.keyID
            #expect(ResolvableToken.resolves(token, with: a.context.state.resolvingKey))
            #expect(key.count == 32 && key != Hex.decode(a.id))
            #expect(!a.links.rotateDisguiseIfDue())
            #expect(a.links.deadlines.contains(a.links.disguise.rotation.due))
            devices.scheduler.advance(byMilliseconds: PrivacyRotation.intervalSeconds * 1000)
            #expect(a.links.rotateDisguiseIfDue())
            #expect(a.links.disguise.token != token && a.links.disguise.keyID != key)
            #expect(ResolvableToken.resolves(a.links.disguise.token, with: a.context.state.resolvingKey))
        }
    }

    @Test func anUnpairedDeviceKeepsOnlyAResolvingKeyThatNoLongerMakesTheTokens() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            let secret = SecureRandom.bytes(32)
            let objectForA = pair(a, b, secretOnA: secret, secretOnB: secret)
            b.links.dial(a.address, device: objectForA)
            // At each link-up the two give each other their resolving keys.
            #expect(devices.spin { b.context.state.devices[a.id]?.resolvingKey == a.context.state.resolvingKey })
            let heldByB = try #require(b.context.state.devices[a.id]?.resolvingKey)
            #expect(ResolvableToken.resolves(a.links.disguise.token, with: heldByB))
            _ = a.pairing.unpair(try #require(a.device(b)))
            #expect(a.context.state.resolvingKey.count == 32 && a.context.state.resolvingKey != heldByB)
            #expect(!ResolvableToken.resolves(ResolvableToken.make(resolvingKey: a.context.state.resolvingKey), with: heldByB))
        }
    }
}
