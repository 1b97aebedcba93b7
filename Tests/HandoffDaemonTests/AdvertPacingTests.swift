// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import HandoffCore
import UserActivityInterfaces
import Testing
@testable import useractivity_handoffd

/// Adverts from a paired device, paced by ``ActivityExchange``: two devices
/// linked over 127.0.0.1, b's frames of the activity going to a real
/// exchange, time moved by hand.
@Suite(.serialized) struct AdvertPacingTests {
    /// a and b linked and paired both ways; b's activity frames go to an exchange (and are counted).
    final class PairedPair {
        let devices: TwoDevices
        let exchange: ActivityExchange
        var advertsRouted = 0
        /// b's PropertiesChanged signals that carry a's CurrentActivity.
        var currentActivitySignals = 0
        private let watcher: Connection

        init(_ devices: TwoDevices) throws {
            self.devices = devices
            let (a, b) = (devices.a!, devices.b!)
            exchange = ActivityExchange(context: b.context)
            exchange.onProtocolError = { [unowned b] link, reason in b.links.misbehaved(link, reason) }
            watcher = try Connection.bus(address: devices.bus.address)
            try DBusMainLoopBridge.attach(watcher, to: devices.loop)
            try watcher.addMatch("type='signal',sender='\(b.context.bus.uniqueName)',member='PropertiesChanged'")
            try watcher.addFilter { [unowned self] message in
                let changed = (try? message.arguments())?.dropFirst().first?.stringVariantEntries ?? []
                if message.path == HandoffInterfaces.devicePathPrefix + a.id, changed.contains(where: { $0.0 == "CurrentActivity" }) {
                    currentActivitySignals += 1
                }
                return false
            }
            b.links.routes.activityFrame = { [unowned self] frame, link in
                if frame.kind == .advert { advertsRouted += 1 }
                exchange.received(frame, on: link)
            }
        }

        var a: DeviceUnderTest { devices.a }
        var b: DeviceUnderTest { devices.b }
        /// a as b sees it.
        var seen: DeviceObject? { b.device(a) }

        func meetPaired() -> Bool { devices.meetPaired() }

        /// a sends adverts titled `titles`, and b's exchange has received them all.
        func send(_ titles: [String]) -> Bool {
            guard let link = a.device(b)?.link else { return false }
            let expected = advertsRouted + titles.count
            for title in titles {
                link.send(Advert.frame(for: Advert(id: "1", activityType: "org.example.Edit", appID: "org.example.Editor", title: title,
                                                   webpageURL: "", timestamp: 1)))
            }
            return devices.spin { advertsRouted >= expected || seen?.reachable != true }
        }

        /// Lets b's bus deliver what it sent, until `count` CurrentActivity signals arrived.
        func signals(reach count: Int) -> Bool { devices.spin { currentActivitySignals >= count } }

        var shownTitle: String? { seen?.advert?.title }
    }

    @Test func aBurstShowsTheFirstAtOnceAndTheLatestWhenTheIntervalEnds() throws {
        try TwoDevices.run { devices in
            let pair = try PairedPair(devices)
            #expect(pair.meetPaired())
            let seen = try #require(pair.seen)
            #expect(pair.send((0..<5).map { "t\($0)" }))
            #expect(pair.shownTitle == "t0")
            #expect(pair.signals(reach: 1))
            // The rest wait, only the latest kept, behind one timer.
            #expect(seen.advertPace.isHolding && seen.advertPace.held?.title == "t4")
            #expect(seen.advertPace.timer?.isPending == true)
            devices.scheduler.advance(byMilliseconds: 249)
            #expect(pair.shownTitle == "t0")
            devices.scheduler.advance(byMilliseconds: 1)
            #expect(pair.shownTitle == "t4")
            #expect(pair.signals(reach: 2))
            #expect(!seen.advertPace.isHolding && seen.advertPace.timer == nil)
            // Nothing waits: no timer, and the next after a quiet spell is shown at once.
            devices.scheduler.advance(byMilliseconds: 10_000)
            #expect(seen.advertPace.timer == nil)
            #expect(pair.send(["t5"]))
            #expect(pair.shownTitle == "t5")
            #expect(pair.signals(reach: 3))
            // Each burst: at most one signal at once and one when its interval ends.
            for _ in 0..<50 { _ = devices.loop.iterate(mayBlock: false) }
            #expect(pair.currentActivitySignals == 3)
        }
    }

    @Test func anAdvertWaitingWhenTheLinkClosesIsNeverShown() throws {
        try TwoDevices.run { devices in
            let pair = try PairedPair(devices)
            #expect(pair.meetPaired())
            let seen = try #require(pair.seen)
            #expect(pair.send(["first", "second"]))
            #expect(pair.shownTitle == "first" && seen.advertPace.isHolding)
            seen.link?.close(reason: "the test closed it")
            #expect(devices.spin { seen.reachable == false })
            // Unreachable: nothing is shown, nothing waits, no timer is left for a gone link.
            #expect(seen.advert == nil && seen.currentActivity.isEmpty)
            #expect(!seen.advertPace.isHolding && seen.advertPace.timer == nil)
            devices.scheduler.advance(byMilliseconds: 1000)
            #expect(seen.advert == nil && seen.currentActivity.isEmpty)
        }
    }

    @Test func unpairingForgetsTheAdvertThatWaits() throws {
        try TwoDevices.run { devices in
            let pair = try PairedPair(devices)
            #expect(pair.meetPaired())
            let seen = try #require(pair.seen)
            #expect(pair.send(["first", "second"]))
            #expect(seen.advertPace.isHolding)
            _ = pair.b.pairing.unpair(seen)
            #expect(!seen.advertPace.isHolding && seen.advertPace.timer == nil && seen.advert == nil)
            devices.scheduler.advance(byMilliseconds: 1000)
            #expect(seen.advert == nil && seen.currentActivity.isEmpty)
        }
    }

    @Test func moreThanAHundredAdvertsInTenSecondsDropTheLinkWithABackOff() throws {
        try TwoDevices.run { devices in
            let pair = try PairedPair(devices)
            #expect(pair.meetPaired())
            let seen = try #require(pair.seen)
            let limit = HandoffLimits.maximumAdvertsPerWindow
            #expect(pair.send((0..<limit).map { "a\($0)" }))
            // Ten seconds later another hundred are within the rule.
            devices.scheduler.advance(byMilliseconds: HandoffLimits.advertFloodWindowMicroseconds / 1000)
            #expect(pair.send((0..<limit).map { "b\($0)" }))
            #expect(seen.reachable)
            #expect(pair.shownTitle == "b0")
            // One more within those ten seconds: a protocol error, and a waits before it may link again.
            #expect(pair.send(["one too many"]))
            #expect(devices.spin { seen.reachable == false })
            #expect(pair.b.closedLinks.contains { $0.contains("adverts in 10 s") }, "\(pair.b.closedLinks)")
            #expect(pair.b.links.isBackingOff(pair.a.id))
            #expect(seen.advert == nil && seen.advertPace.timer == nil)
        }
    }
}
