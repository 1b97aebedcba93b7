// SPDX-License-Identifier: Apache-2.0
import CGLib
import Foundation
import GLibSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The source the libdbus bridge uses for watches: switching it on and off
/// must take effect on the loop's thread (a rewritten record) and from any
/// other thread (which must also wake a loop blocked in poll()).
@Suite("PollSource")
struct PollSourceTests {
    /// A pipe whose read end the source watches.
    private final class Pipe {
        let readEnd: Int32
        let writeEnd: Int32
        init() throws {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
            readEnd = fds[0]
            writeEnd = fds[1]
        }
        func write() { var byte: UInt8 = 1; _ = Glibc.write(writeEnd, &byte, 1) }
        func drain() { var buffer = [UInt8](repeating: 0, count: 64); _ = read(readEnd, &buffer, buffer.count) }
        deinit { close(readEnd); close(writeEnd) }
    }

    @Test("Disabled sources do not fire; enabling on the loop's own thread takes effect")
    func onTheLoopThread() throws {
        let pipe = try Pipe()
        let loop = MainLoop.withNewContext()
        var fired = 0
        let source = loop.pollSource(pipe.readEnd, condition: G_IO_IN, enabled: false) { _ in
            fired += 1
            pipe.drain()
            return true
        }
        pipe.write()
        loop.withThreadDefault {
            let acquired = g_main_context_acquire(loop.context)
            defer { if acquired != 0 { g_main_context_release(loop.context) } }
            for _ in 0..<5 { loop.iterate(mayBlock: false) }
            #expect(fired == 0, "a disabled source must not fire")
            #expect(loop.isOwnedByCurrentThread)
            source.update(enabled: true, condition: G_IO_IN)
            for _ in 0..<5 where fired == 0 { loop.iterate(mayBlock: false) }
            #expect(fired == 1)
            source.update(enabled: false, condition: G_IO_IN)
            pipe.write()
            for _ in 0..<5 { loop.iterate(mayBlock: false) }
            #expect(fired == 1, "disabled again")
            source.cancel()
        }
    }

    @Test("Switching a source on and off keeps GLib's poll set sorted by descriptor")
    func pollSetStaysSorted() throws {
        let loop = MainLoop.withNewContext()  // its wake-up descriptor is the lowest here
        let below = try Pipe()
        let toggled = try Pipe()
        let above = try Pipe()
        var firedBelow = 0, firedToggled = 0, firedAbove = 0
        let sources = [
            loop.pollSource(below.readEnd, condition: G_IO_IN) { _ in firedBelow += 1; below.drain(); return true },
            loop.pollSource(toggled.readEnd, condition: G_IO_IN, enabled: false) { _ in firedToggled += 1; toggled.drain(); return true },
            loop.pollSource(above.readEnd, condition: G_IO_IN) { _ in firedAbove += 1; above.drain(); return true },
        ]
        loop.withThreadDefault {
            let acquired = g_main_context_acquire(loop.context)
            defer { if acquired != 0 { g_main_context_release(loop.context) } }
            for round in 0..<3 {
                sources[1].update(enabled: round != 1, condition: G_IO_IN)
                // What g_main_context_check will walk: it must ascend strictly.
                var maxPriority: gint = 0
                _ = g_main_context_prepare(loop.context, &maxPriority)
                var timeout: gint = 0
                var fds = [GPollFD](repeating: GPollFD(), count: 16)
                let count = Int(g_main_context_query(loop.context, maxPriority, &timeout, &fds, gint(fds.count)))
                let polled = fds.prefix(count).map(\.fd)
                #expect(polled == polled.sorted() && Set(polled).count == polled.count, "poll set \(polled)")
                #expect(polled.contains(toggled.readEnd), "the descriptor stays in the set, enabled or not")
                _ = g_main_context_check(loop.context, maxPriority, &fds, gint(count))
                g_main_context_dispatch(loop.context)
                below.write(); toggled.write(); above.write()
                for _ in 0..<5 { loop.iterate(mayBlock: false) }
            }
            #expect(firedBelow == 3 && firedAbove == 3)
            #expect(firedToggled == 2, "fires in the two rounds it is enabled; the byte of the disabled round waits")
            for source in sources { source.cancel() }
        }
    }

    @Test("A loop nested inside the action neither runs the action again nor spins on the descriptor")
    func nestedLoop() throws {
        let pipe = try Pipe()
        let other = try Pipe()
        // A re-entered action drains the byte: the outer one must not block reading.
        _ = fcntl(pipe.readEnd, F_SETFL, O_NONBLOCK)
        let loop = MainLoop.withNewContext()
        var depth = 0, deepest = 0, fired = 0, otherFired = 0, nestedDispatches = 0
        var source: PollSource?
        let otherSource = loop.pollSource(other.readEnd, condition: G_IO_IN) { _ in otherFired += 1; other.drain(); return true }
        source = loop.pollSource(pipe.readEnd, condition: G_IO_IN) { _ in
            depth += 1
            deepest = max(deepest, depth)
            fired += 1
            if fired == 1 {
                // An app's modal dialog: a loop nested in the callback, on the
                // same context, before the byte is read.
                other.write()
                for _ in 0..<20 where g_main_context_iteration(loop.context, CGLIB_FALSE) != 0 { nestedDispatches += 1 }
            }
            pipe.drain()
            depth -= 1
            return true
        }
        pipe.write()
        loop.withThreadDefault {
            let acquired = g_main_context_acquire(loop.context)
            defer { if acquired != 0 { g_main_context_release(loop.context) } }
            for _ in 0..<5 where fired == 0 { loop.iterate(mayBlock: false) }
            #expect(fired == 1)
            #expect(deepest == 1, "the action ran again inside itself")
            #expect(otherFired == 1, "other sources still run in the nested loop")
            #expect(nestedDispatches == 1, "the nested loop dispatched \(nestedDispatches) times: it spins on the unread descriptor")
            // Back in the outer loop, the source is polled again.
            pipe.write()
            for _ in 0..<5 where fired == 1 { loop.iterate(mayBlock: false) }
            #expect(fired == 2)
            source?.cancel()
            otherSource.cancel()
        }
    }

    @Test("Enabling from another thread wakes a loop blocked in poll()")
    func fromAnotherThread() throws {
        let pipe = try Pipe()
        let loop = MainLoop.withNewContext()
        let fired = Atomic<Int>(0)
        let source = loop.pollSource(pipe.readEnd, condition: G_IO_IN, enabled: false) { _ in
            fired.add(1, ordering: .relaxed)
            pipe.drain()
            loop.quit()
            return true
        }
        pipe.write()  // readable, but not polled yet
        // The loop runs on its own thread; this test only touches it to enable the source.
        nonisolated(unsafe) let runningLoop = loop
        let thread = Thread { runningLoop.withThreadDefault { runningLoop.run() } }
        thread.start()
        usleep(200_000)  // let the loop block in poll() with nothing enabled
        #expect(fired.load(ordering: .relaxed) == 0)
        source.update(enabled: true, condition: G_IO_IN)  // not the owner: must wake it
        let deadline = Date().addingTimeInterval(5)
        while fired.load(ordering: .relaxed) == 0 && Date() < deadline { usleep(5_000) }
        #expect(fired.load(ordering: .relaxed) == 1, "the blocked loop never saw the enabled source")
        if fired.load(ordering: .relaxed) == 0 { loop.quit() }
        while !thread.isFinished { usleep(1_000) }
        source.cancel()
    }
}
