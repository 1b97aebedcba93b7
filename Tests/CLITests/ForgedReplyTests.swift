// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The CLI calls the service by its well-known name with blocking calls, in
/// which libdbus takes the first reply that carries the call's serial. Another
/// connection on the bus could send one first.
@Suite("useractivityctl and forged replies")
struct ForgedReplyTests {
    /// A stand-in that owns the service's name; on each Search, a second
    /// connection answers first with a result of its choosing, then the
    /// stand-in answers with none.
    private final class Stage: @unchecked Sendable {
        let service: Connection
        let rogue: Connection
        private let lock = NSLock()
        private var stopped = false
        private var searches = 0
        private var thread: Thread?

        init(address: String, forging: Bool) throws {
            service = try Connection.bus(address: address)
            rogue = try Connection.bus(address: address)
            guard try service.requestName(UA.busName) == .primaryOwner else { throw StageFailure() }
            try service.addFilter { [unowned self] message in
                guard message.kind == .methodCall, message.member == "Search" else { return false }
                lock.withLock { searches += 1 }
                if forging, let forged = try? Message.methodReturn(to: message, [Self.results(title: "Forged result")]) {
                    rogue.send(forged)
                    rogue.flush()
                    usleep(100_000)  // the forgery is on its way first
                }
                if let genuine = try? Message.methodReturn(to: message, [Self.results(title: "Genuine result")]) {
                    service.send(genuine)
                }
                return true
            }
            let thread = Thread { [unowned self] in
                while !lock.withLock({ stopped }) { service.readWriteDispatch(timeoutMilliseconds: 20) }
            }
            self.thread = thread
            thread.start()
        }

        var searchCount: Int { lock.withLock { searches } }

        func stop() {
            lock.withLock { stopped = true }
            while thread?.isFinished == false { usleep(1000) }
        }

        /// `aa{sv}` with one result, as Search answers.
        static func results(title: String) -> TypedValue {
            .array(elementType: "a{sv}", [.stringVariantDictionary([
                ("saved-id", .string(String(repeating: "f", count: 32))), ("app-id", .string(UA.editor)),
                ("activity-type", .string(UA.editType)), ("title", .string(title)),
            ])])
        }
    }

    private struct StageFailure: Error {}

    @Test("search refuses a reply that does not come from the service's owner, and prints the owner's")
    func forgedSearchReply() throws {
        // Positive control first: without the forgery the stand-in's answer is printed.
        let honest = try CLIHarness(installDaemon: false)
        let plain = try Stage(address: honest.bus.address, forging: false)
        let shown = try honest.ctl(["search", "anything"])
        plain.stop()
        #expect(shown.succeeded && shown.stdout.contains("Genuine result"), "\(shown)")

        let h = try CLIHarness(installDaemon: false)
        let stage = try Stage(address: h.bus.address, forging: true)
        defer { stage.stop() }
        let result = try h.ctl(["search", "anything"])
        #expect(stage.searchCount == 1, "the CLI's Search reached the stand-in")
        #expect(!result.succeeded, "the CLI accepted a reply from another connection: \(result)")
        #expect(!result.stdout.contains("Forged result"), "\(result.stdout)")
        #expect(result.stderr.contains("ignored as forged") && result.stderr.contains(stage.rogue.uniqueName), "\(result.stderr)")
    }
}
