// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing
import TypedValues

/// `Connection.whenQuiet`: the daemon's signals wait for a short pause after
/// a reply, but never long enough to be seen out of order.
@Suite("Work that waits for a quiet moment")
struct QuietWorkTests {
    /// A connection driven by a GLib loop that the test runs on its own
    /// thread, and a plain client connection that records what it receives.
    private final class Pair {
        let session: SessionEnvironment
        let bus: PrivateBus
        let loop = MainLoop.withNewContext()
        let service: Connection
        let client: Connection
        /// What the client received, in order: "signal First", "reply 7"…
        private(set) var received: [String] = []

        /// - Parameter scheduler: times the pause instead of GLib (the test moves it by hand).
        init(scheduler: ManualScheduler? = nil) throws {
            session = try SessionEnvironment()
            bus = try PrivateBus(environment: session)
            let service = try Connection.bus(address: bus.address)
            let loop = self.loop
            try loop.withThreadDefault { try DBusMainLoopBridge.attach(service, to: loop, scheduler: scheduler) }
            self.service = service
            client = try Connection.bus(address: bus.address)
            try client.addMatch("type='signal',path='/com/example/Quiet'")
            try client.addFilter { [unowned self] message in
                switch message.kind {
                case .signal where message.path == "/com/example/Quiet": received.append("signal \(message.member ?? "")")
                case .methodReturn: received.append("reply \(message.replySerial)")
                default: return false
                }
                return true
            }
            // What the bus sent the service on connecting (NameAcquired) is dispatched now, not during a test.
            loop.withThreadDefault {
                let settled = loop.after(milliseconds: 50) { [loop] in loop.quit() }
                loop.run()
                settled.cancel()
            }
        }

        func signal(_ member: String) -> Message { Message.signal(path: "/com/example/Quiet", interface: "com.example.Quiet", member: member) }

        /// Runs the service's loop (on this thread) until `done` or 5 s.
        func runLoop(until done: @escaping () -> Bool) {
            loop.withThreadDefault {
                let check = loop.every(milliseconds: 5) { [loop] in
                    if done() { loop.quit() }
                    return true
                }
                let deadline = loop.after(milliseconds: 5000) { [loop] in loop.quit() }
                loop.run()
                check.cancel()
                deadline.cancel()
            }
        }

        /// Reads what reaches the client until it has `count` messages or 5 s pass.
        func receive(_ count: Int) -> [String] {
            _ = waitUntil(timeout: 5) {
                client.readWriteDispatch(timeoutMilliseconds: 20)
                return received.count >= count
            }
            return received
        }
    }

    @Test("Without other traffic the work runs once its pause has passed, not inside the call that hands it over")
    func runsAfterAPause() throws {
        let scheduler = ManualScheduler(now: 0)
        let pair = try Pair(scheduler: scheduler)
        var ran = 0
        pair.loop.withThreadDefault {
            pair.service.whenQuiet {
                ran += 1
                pair.service.send(pair.signal("Late"))
            }
        }
        #expect(ran == 0)
        scheduler.advance(byMilliseconds: 0)
        #expect(ran == 0, "ran before its pause")
        scheduler.advance(byMilliseconds: 1)
        #expect(ran == 1)
        #expect(pair.receive(1) == ["signal Late"])
    }

    @Test("Anything sent afterwards leaves after what the work sends, and the work runs in the order handed over")
    func runsBeforeTheNextSend() throws {
        let pair = try Pair()
        var order: [String] = []
        pair.loop.withThreadDefault {
            pair.service.whenQuiet {
                order.append("first")
                pair.service.send(pair.signal("First"))
                // Work handed over while the waiting work runs still runs before the send that started it.
                pair.service.whenQuiet {
                    order.append("third")
                    pair.service.send(pair.signal("Third"))
                }
            }
            pair.service.whenQuiet {
                order.append("second")
                pair.service.send(pair.signal("Second"))
            }
            pair.service.send(pair.signal("Fourth"))
        }
        #expect(order == ["first", "second", "third"])
        #expect(pair.receive(4) == ["signal First", "signal Second", "signal Third", "signal Fourth"])
    }

    @Test("A message that arrives during the pause is dispatched after the work, even one libdbus answers itself (Ping)")
    func runsBeforeTheNextDispatch() throws {
        let pair = try Pair()
        // The Ping waits in the service's socket before the work is handed
        // over; the loop's first poll finds it well before the pause ends.
        let ping = Message.methodCall(destination: pair.service.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
        pair.client.send(ping)
        pair.client.flush()
        usleep(50_000)
        pair.loop.withThreadDefault {
            pair.service.whenQuiet { pair.service.send(pair.signal("Changed")) }
        }
        pair.runLoop { pair.client.readWriteDispatch(timeoutMilliseconds: 0) && pair.received.count >= 2 }
        #expect(pair.receive(2) == ["signal Changed", "reply \(ping.serial)"])
    }

    @Test("Without a main loop the work runs at once")
    func runsAtOnceWithoutALoop() throws {
        let session = try SessionEnvironment()
        let bus = try PrivateBus(environment: session)
        let connection = try Connection.bus(address: bus.address)
        var ran = false
        connection.whenQuiet { ran = true }
        #expect(ran)
    }
}
