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

    @Test func anUnknownKeyIsRefusedWhileNotDiscoverable() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            b.links.dial(a.address)
            #expect(devices.spin { b.links.links.isEmpty && a.links.links.isEmpty })
            #expect(a.context.devices.isEmpty)
            #expect(b.device(a)?.reachable != true)
            #expect(!b.closedLinks.isEmpty)
        }
    }

    @Test func connectionsStillAuthenticatingAreCappedPerAddressAndInAll() throws {
        try TwoDevices.run { devices in
            let links = devices.a.links
            for port in 1...PeerLinks.maximumUnauthenticatedPerAddress {
                #expect(links.admissionRefusal(from: "192.0.2.1:\(port)") == nil)
                _ = links.makeLink(role: .server, address: "192.0.2.1:\(port)")
            }
            #expect(links.admissionRefusal(from: "192.0.2.1:999")?.contains("192.0.2.1") == true)
            #expect(links.admissionRefusal(from: "192.0.2.2:1") == nil)
            for index in links.links.count..<PeerLinks.maximumUnauthenticated {
                _ = links.makeLink(role: .server, address: "198.51.100.\(index):1")
            }
            #expect(links.admissionRefusal(from: "203.0.113.5:1") != nil)
            // A link that authenticated no longer counts.
            links.links.first?.helloReceived = true
            #expect(links.admissionRefusal(from: "203.0.113.5:1") == nil)
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
