// SPDX-License-Identifier: Apache-2.0
import CGLib
import GLibSupport
import Testing

/// The timer behind the pause before signals: armed again and again on one
/// source, it must fire once per arming, not before its time, and never
/// when disarmed.
@Suite("ReadyTimer")
struct ReadyTimerTests {
    /// Runs the loop until `done` or `milliseconds` pass; returns the time taken in milliseconds.
    private func run(_ loop: MainLoop, atMost milliseconds: Int, until done: () -> Bool) -> Int {
        let start = g_get_monotonic_time()
        while !done() && g_get_monotonic_time() - start < milliseconds * 1000 {
            loop.iterate(mayBlock: false)
            g_usleep(200)
        }
        return (g_get_monotonic_time() - start) / 1000
    }

    @Test("Fires once per arming, after its delay, and can be armed again from its own action")
    func firesOncePerArming() {
        let loop = MainLoop.withNewContext()
        var fired = 0
        var timer: ReadyTimer?
        timer = loop.readyTimer {
            fired += 1
            if fired == 1 { timer?.arm(milliseconds: 5) }
        }
        #expect(timer?.isArmed == false)
        loop.withThreadDefault {
            for _ in 0..<5 { loop.iterate(mayBlock: false) }
            #expect(fired == 0, "an unarmed timer must not fire")
            timer?.arm(milliseconds: 20)
            #expect(timer?.isArmed == true)
            loop.iterate(mayBlock: false)
            #expect(fired == 0, "armed for 20 ms: not at once")
            let elapsed = run(loop, atMost: 2000) { fired == 1 }
            #expect(fired == 1)
            #expect(elapsed >= 19, "fired after \(elapsed) ms, before its 20 ms")
            // Re-armed by its own action: fires a second time, then stays quiet.
            _ = run(loop, atMost: 2000) { fired == 2 }
            #expect(fired == 2)
            #expect(timer?.isArmed == false)
            _ = run(loop, atMost: 30) { false }
            #expect(fired == 2, "fired again without being armed")
        }
    }

    @Test("A loop blocked in poll() wakes when the timer is due; disarming and re-arming replace the time")
    func wakesBlockedLoopAndDisarms() {
        let loop = MainLoop.withNewContext()
        var fired = 0
        let timer = loop.readyTimer { fired += 1 }
        loop.withThreadDefault {
            timer.arm(milliseconds: 10)
            timer.disarm()
            _ = run(loop, atMost: 40) { false }
            #expect(fired == 0, "a disarmed timer fired")
            timer.arm(milliseconds: 500)
            timer.arm(milliseconds: 10)  // the later arming replaces the earlier
            let start = g_get_monotonic_time()
            // Wakes the loop after 1 s should the timer fail to, so that a failure cannot hang the test.
            let backstop = loop.after(milliseconds: 1000) {}
            defer { backstop.cancel() }
            // Blocking iterations: GLib must take its poll() timeout from the timer.
            while fired == 0 && g_get_monotonic_time() - start < 2_000_000 { loop.iterate(mayBlock: true) }
            let elapsed = (g_get_monotonic_time() - start) / 1000
            #expect(fired == 1)
            #expect(elapsed < 400, "a blocking loop took \(elapsed) ms to run a timer due in 10 ms")
        }
    }
}
