// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
@testable import useractivity_handoffd

/// ``PeerLinks`` in the test process: two devices' listeners and dials over
/// 127.0.0.1 with their real identities and TLS, the pin policy, the hello,
/// where frames go, closing, and reconnecting on a hand-moved clock.
@Suite(.serialized) struct PeerLinksTests {
    @Test func aDialedDeviceAndItsListenerMeetOnHello() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let seenByA = try #require(a.device(b))
            let seenByB = try #require(b.device(a))
            #expect(seenByA.name == "Laptop" && seenByB.name == "Desk")
            // The dialer knows the address it dialed; the listener the one the hello gave.
            #expect(seenByB.address == a.address)
            #expect(seenByA.address == "127.0.0.1:\(b.links.boundPort)")
            // Dialed by address (as AddPeer does): kept across restarts; the listener keeps a transient key.
            #expect(b.context.state.devices[a.id] != nil)
            #expect(a.context.state.devices[b.id] == nil)
            #expect(!seenByA.paired && !seenByB.paired)
        }
    }

    @Test func twoDevicesThatDialEachOtherAtOnceKeepOneLinkAndBothObjects() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            // Both discoverable and found by discovery at the same moment: neither is kept across restarts.
            for side in [a, b] { side.context.discoverableWindow.set(true, now: devices.scheduler.monotonic) }
            a.links.dial(b.address)?.foundByDiscovery = true
            b.links.dial(a.address)?.foundByDiscovery = true
            // Each side made two links (the one it dialed, the one it accepted) and keeps one, the same one.
            #expect(devices.spin {
                a.links.linkSerial == 2 && b.links.linkSerial == 2 && a.links.links.count == 1 && b.links.links.count == 1
                    && a.device(b)?.reachable == true && b.device(a)?.reachable == true
            }, "links: \(a.links.links.map(\.role)) and \(b.links.links.map(\.role))")
            let kept = try #require(a.device(b)?.link)
            #expect(kept.role != b.device(a)?.link?.role)
            // The one whose client has the lower id.
            #expect((kept.role == .client) == (a.id < b.id))
        }
    }

    @Test func anUnknownKeyGetsNothingWhileNotDiscoverable() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            b.links.dial(a.address)
            // Behind the throwaway certificate the handshake completes (a paired device would prove
            // itself next); a says nothing and waits for a proof that does not come.
            #expect(devices.spin { a.links.links.first?.awaitingProof == true })
            #expect(a.links.links.first?.showedEphemeralCertificate == true)
            devices.scheduler.advance(byMilliseconds: a.links.handshakeSeconds * 1000)
            a.links.tickLinks()
            #expect(devices.spin { b.links.links.isEmpty && a.links.links.isEmpty })
            #expect(a.context.devices.isEmpty)
            // No hello reached b: it made no object for a.
            #expect(b.device(a) == nil)
            #expect(!b.closedLinks.isEmpty)
        }
    }

    @Test func connectionsStillAuthenticatingAreCappedPerAddressAndShareTheSlotsFairly() throws {
        try TwoDevices.run { devices in
            let links = devices.a.links
            let limits = links.admission.limits
            func arrive(_ address: String) -> Bool {
                guard links.admit(connectionFrom: address) else { return false }
                _ = links.makeLink(role: .server, address: address)
                return true
            }
            func waiting(from host: String) -> Int { links.links.filter { !$0.helloReceived && hostPart(of: $0.address) == host }.count }
            for port in 1...limits.perGroup { #expect(arrive("192.0.2.1:\(port)")) }
            let oldest = try #require(links.links.first)
            // One more from that address takes the place of its oldest.
            #expect(arrive("192.0.2.1:999"))
            #expect(oldest.isClosed)
            #expect(waiting(from: "192.0.2.1") == limits.perGroup)
            // Every other slot goes to an address of its own; then each newcomer
            // from a new address takes a slot of the address holding the most.
            var index = 0
            while links.links.count < limits.total {
                index += 1
                #expect(arrive("198.51.100.\(index):1"))
            }
            while waiting(from: "192.0.2.1") > 1 {
                index += 1
                #expect(arrive("198.51.100.\(index):1"))
            }
            #expect(links.links.count == limits.total)
            // All addresses hold one: one of them again is refused.
            #expect(!arrive("198.51.100.1:2"))
            // A link that authenticated no longer counts.
            links.links.first?.helloReceived = true
            #expect(arrive("198.51.100.1:2"))
        }
    }

    @Test func framesOfTheActivityGoToTheExchangeAndAClosedLinkIsReported() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let link = try #require(a.device(b)?.link)
            // Only a paired link carries the activity's frames (an unpaired one is dropped for them).
            link.isPaired = true
            b.device(a)?.link?.isPaired = true
            link.send(Frame(.keepalive))
            link.send(Advert.frame(for: nil))
            link.send(Frame(.fetch, ["request": .uint32(1), "id": .string("7")]))
            #expect(devices.spin { b.routedFrames.count == 2 })
            #expect(b.routedFrames.map(\.kind) == [.advert, .fetch])
            #expect(b.routedFrames.allSatisfy { $0.from == a.id })
            link.close(reason: "the test closed it")
            #expect(devices.spin { b.device(a)?.reachable == false && !b.closedLinks.isEmpty })
            // b dialed a's address: a's object stays, waiting to reconnect; a's transient object for b goes.
            #expect(b.device(a) != nil)
            #expect(a.device(b) == nil)
        }
    }

    @Test func aDeviceThatBrokeTheProtocolWaitsLongerEachTimeBeforeItLinksAgain() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            for side in [a, b] {
                let other = side === a ? b : a
                side.device(other)?.paired = true
                side.device(other)?.link?.isPaired = true
            }
            var wait = a.links.firstBackOffMicroseconds
            for offence in 1...3 {
                let link = try #require(a.device(b)?.link)
                a.links.misbehaved(link, "\(link.address) broke the protocol in the test: disconnected")
                #expect(devices.spin { b.device(a)?.reachable == false && a.device(b)?.reachable == false })
                // a neither takes b's connections nor dials b until the back-off ends.
                #expect(a.links.deadlines.contains(devices.scheduler.monotonic + wait), "offence \(offence)")
                a.links.reconnect(now: devices.scheduler.monotonic)
                #expect(a.links.links.isEmpty)
                b.links.dial(a.address)
                #expect(devices.spin { b.links.links.isEmpty })
                #expect(a.device(b)?.reachable == false)
                devices.scheduler.advance(byMilliseconds: wait / 1000 - 1)
                b.links.dial(a.address)
                #expect(devices.spin { b.links.links.isEmpty }, "offence \(offence): let in before its wait ended")
                devices.scheduler.advance(byMilliseconds: 1)
                b.links.dial(a.address)
                #expect(devices.spin { a.device(b)?.reachable == true && b.device(a)?.reachable == true }, "offence \(offence)")
                wait *= 2
            }
        }
    }

    @Test func aPairedDeviceThatWentAwayIsDialedAgainWhenItsReconnectIsDue() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            a.context.discoverableWindow.set(true, now: devices.scheduler.monotonic)
            let known = DeviceObject(id: a.id)
            known.address = a.address
            known.paired = true
            known.reconnectAt = devices.scheduler.monotonic + 2_000_000
            b.context.devices[a.id] = known
            #expect(b.links.deadlines.contains(known.reconnectAt))
            b.links.reconnect(now: devices.scheduler.monotonic)
            #expect(b.links.links.isEmpty)
            devices.scheduler.advance(byMilliseconds: 2000)
            b.links.reconnect(now: devices.scheduler.monotonic)
            #expect(b.links.links.count == 1)
            // The next attempt waits five seconds more.
            #expect(known.reconnectAt == devices.scheduler.monotonic + 5_000_000)
            #expect(devices.spin { known.reachable })
            #expect(!b.links.deadlines.contains(known.reconnectAt))
        }
    }
}
