// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing

@Suite struct LinkLivenessTests {
    @Test func sendsKeepalivesAndGivesUpAfterThreeSilentIntervals() {
        let clock = ManualClock()
        var liveness = LinkLiveness(keepaliveSeconds: 15, now: clock.nowMicroseconds)
        clock.advance(seconds: 14)
        #expect(liveness.action(now: clock.nowMicroseconds, midFrame: false) == .nothing)
        clock.advance(seconds: 1)
        #expect(liveness.action(now: clock.nowMicroseconds, midFrame: false) == .sendKeepalive)
        liveness.sent(now: clock.nowMicroseconds)
        #expect(liveness.action(now: clock.nowMicroseconds, midFrame: false) == .nothing)
        clock.advance(seconds: 30)
        #expect(liveness.action(now: clock.nowMicroseconds, midFrame: true) == .timedOut(midFrame: true))
    }

    @Test func anythingReceivedKeepsTheLinkAlive() {
        let clock = ManualClock()
        var liveness = LinkLiveness(keepaliveSeconds: 1, now: clock.nowMicroseconds)
        for _ in 0..<10 {
            clock.advance(seconds: 2)
            liveness.received(now: clock.nowMicroseconds)
            liveness.sent(now: clock.nowMicroseconds)
            #expect(liveness.action(now: clock.nowMicroseconds, midFrame: false) == .nothing)
        }
        clock.advance(seconds: 3)
        #expect(liveness.action(now: clock.nowMicroseconds, midFrame: false) == .timedOut(midFrame: false))
    }

    @Test func nextDueIsTheEarlierOfTheKeepaliveAndTheTimeout() {
        var liveness = LinkLiveness(keepaliveSeconds: 15, now: 0)
        #expect(liveness.nextDue == 15_000_000)
        liveness.sent(now: 14_000_000)
        #expect(liveness.nextDue == 29_000_000)
        liveness.sent(now: 40_000_000)
        #expect(liveness.nextDue == 45_000_000, "nothing received since 0: the timeout comes first")
        #expect(liveness.action(now: liveness.nextDue, midFrame: false) == .timedOut(midFrame: false))
    }
}

@Suite struct DiscoverableWindowTests {
    @Test func turnsItselfOffAfterTheTimeout() {
        let clock = ManualClock()
        var window = DiscoverableWindow()
        window.set(true, now: clock.nowMicroseconds)
        clock.advance(seconds: 119)
        var expired = window.expire(now: clock.nowMicroseconds, timeoutSeconds: 120)
        #expect(!expired)
        clock.advance(seconds: 1)
        expired = window.expire(now: clock.nowMicroseconds, timeoutSeconds: 120)
        #expect(expired)
        #expect(!window.isOn)
        expired = window.expire(now: clock.nowMicroseconds, timeoutSeconds: 120)
        #expect(!expired)
    }

    @Test func nextDueOnlyWhileOnWithATimeout() {
        var window = DiscoverableWindow()
        #expect(window.nextDue(timeoutSeconds: 120) == nil)
        window.set(true, now: 5_000_000)
        #expect(window.nextDue(timeoutSeconds: 120) == 125_000_000)
        #expect(window.nextDue(timeoutSeconds: 0) == nil)
        window.set(false, now: 6_000_000)
        #expect(window.nextDue(timeoutSeconds: 120) == nil)
    }

    @Test func zeroMeansUntilTurnedOff() {
        let clock = ManualClock()
        var window = DiscoverableWindow()
        window.set(true, now: clock.nowMicroseconds)
        clock.advance(seconds: 100_000)
        let expired = window.expire(now: clock.nowMicroseconds, timeoutSeconds: 0)
        #expect(!expired)
        #expect(window.isOn)
    }
}
