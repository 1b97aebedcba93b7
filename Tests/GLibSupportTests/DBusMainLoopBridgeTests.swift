// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing

/// The bridge drives a connection on whatever context it is given; the
/// client library gives it an app's, and apps run loops nested inside their
/// callbacks (a modal dialog). libdbus cannot dispatch while it dispatches,
/// so a nested loop must neither hand the connection's messages to it again
/// nor poll its socket in vain; what arrives meanwhile comes once the
/// callback returns, in order.
@Suite("DBusMainLoopBridge")
struct DBusMainLoopBridgeTests {
    private static let interface = "org.example.Nested"

    /// What the loop's thread saw, read by the test's thread.
    private final class Observations: @unchecked Sendable {
        private let lock = NSLock()
        private var members: [String] = []
        private var depth = 0
        private var deepestDepth = 0
        private var insideDialog: [String] = []
        private var sawReadable = false

        var received: [String] { lock.withLock { members } }
        var deepest: Int { lock.withLock { deepestDepth } }
        var deliveredInsideDialog: [String] { lock.withLock { insideDialog } }
        var dialogSawTheSocketReadable: Bool { lock.withLock { sawReadable } }
        func entered(_ member: String) {
            lock.withLock {
                members.append(member)
                depth += 1
                deepestDepth = max(deepestDepth, depth)
            }
        }
        func left() { lock.withLock { depth -= 1 } }
        func dialogClosed(sawReadable readable: Bool) {
            lock.withLock {
                sawReadable = readable
                insideDialog = Array(members.dropFirst())
            }
        }
    }

    @Test("A loop nested in a message handler: no second dispatch inside it, other sources run, the rest follows in order")
    func nestedLoopInsideAHandler() throws {
        let bus = try PrivateBus()
        let app = try Connection.bus(address: bus.address)
        let sender = try Connection.bus(address: bus.address)
        // Whatever the bus sent on registering (NameAcquired) is read by now.
        _ = try app.callBus("GetId")
        let socket = try #require(app.socketDescriptor)
        let seen = Observations()
        let dialogOpen = DispatchSemaphore(value: 0)
        let loop = MainLoop.withNewContext()
        try app.addFilter { message in
            guard message.interface == Self.interface, let member = message.member else { return false }
            seen.entered(member)
            defer { seen.left() }
            guard member == "First" else { return true }
            // The dialog: a loop of its own on the same context, closed once
            // more of the bus's messages wait on the socket. Its source is
            // not the bridge's, so GLib polls it in the nested loop.
            let dialog = g_main_loop_new(loop.context, CGLIB_FALSE)
            defer { g_main_loop_unref(dialog) }
            var sawReadable = false
            let waitForMore = loop.onFileDescriptor(socket, condition: G_IO_IN) { _ in
                sawReadable = true
                g_main_loop_quit(dialog)
                return false
            }
            dialogOpen.signal()
            g_main_loop_run(dialog)
            waitForMore.cancel()
            seen.dialogClosed(sawReadable: sawReadable)
            return true
        }
        try DBusMainLoopBridge.attach(app, to: loop)
        nonisolated(unsafe) let runningLoop = loop
        let thread = Thread { runningLoop.withThreadDefault { runningLoop.run() } }
        thread.start()

        func send(_ member: String) {
            sender.send(.methodCall(destination: app.uniqueName, path: "/org/example/Nested",
                                    interface: Self.interface, member: member))
            sender.flush()
        }
        send("First")
        let opened = dialogOpen.wait(timeout: .now() + 30) == .success
        #expect(opened, "the first message never reached its handler")
        send("Second")
        send("Third")
        let all = waitUntil(timeout: 30, interval: 0.01) { seen.received.count >= 3 }
        #expect(all, "received \(seen.received): the loop thread hangs (a dispatch inside the dispatch waits for itself) or lost messages")
        #expect(seen.received == ["First", "Second", "Third"])
        #expect(seen.deepest == 1, "a handler ran inside another")
        #expect(seen.dialogSawTheSocketReadable, "the dialog's own source did not run in the nested loop")
        #expect(seen.deliveredInsideDialog.isEmpty, "dispatched inside the nested loop: \(seen.deliveredInsideDialog)")

        guard all else { return }  // the loop thread is stuck: leave it
        loop.quit()
        while !thread.isFinished { usleep(1000) }
    }
}
