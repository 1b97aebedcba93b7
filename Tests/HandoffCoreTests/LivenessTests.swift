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
