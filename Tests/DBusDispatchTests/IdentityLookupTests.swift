// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// A failed or timed-out `GetConnectionCredentials` is not a verdict on the
/// caller: it must not be cached (as "confined, with no app") for the
/// connection's life.
/// A value shared with the service's thread.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock(); defer { lock.unlock() }
        return body(&value)
    }
}

@Suite struct IdentityLookupTests {
    /// Fails the lookups of one connection while `failing` is set, counting them.
    final class Fault: Sendable {
        let failing = Locked(false)
        let target = Locked<String?>(nil)
        let lookups = Locked(0)

        func check(_ sender: String) -> DBusFailure? {
            guard target.withLock({ $0 }) == sender else { return nil }
            lookups.withLock { $0 += 1 }
            guard failing.withLock({ $0 }) else { return nil }
            return DBusFailure(name: "org.freedesktop.DBus.Error.NoReply", message: "injected: the bus did not answer in time")
        }
    }

    @Test func aFailedLookupGivesANamedErrorAndTheNextCallAsksAgain() throws {
        let fault = Fault()
        let harness = try ServiceHarness(identityLookupFault: { fault.check($0) })
        let client = try harness.client()
        fault.target.withLock { $0 = client.uniqueName }
        fault.failing.withLock { $0 = true }

        // The call that needed the identity gets a clear error, after one retry.
        var message = ""
        let name = dbusErrorName {
            do {
                try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
            } catch let failure as DBusFailure {
                message = failure.message
                throw failure
            }
        }
        #expect(name == "org.example.UserActivity.Error.UnknownApplication")
        #expect(message.contains("GetConnectionCredentials"), "\(message)")
        #expect(fault.lookups.withLock { $0 } == 2, "one lookup and one retry")

        // The bus answers again: this host caller is believed, as it always was.
        fault.failing.withLock { $0 = false }
        try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
        let path = try client.createActivity("com.example.Editor.edit-document", [])
        #expect(path.hasPrefix("/org/example/UserActivity/activity/"))
        #expect(fault.lookups.withLock { $0 } == 3)
        // And the answer is kept: no more lookups.
        _ = try client.property(managerPath, managerInterface, "Version")
        #expect(fault.lookups.withLock { $0 } == 3)
    }

    @Test func aLookupThatFailsOnceIsRetried() throws {
        let fault = Fault()
        let failures = Locked(1)
        let harness = try ServiceHarness(identityLookupFault: { sender in
            guard let failure = fault.check(sender) else { return nil }
            return failures.withLock { left in
                guard left > 0 else { return nil }
                left -= 1
                return failure
            }
        })
        let client = try harness.client()
        fault.target.withLock { $0 = client.uniqueName }
        fault.failing.withLock { $0 = true }
        try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
        #expect(fault.lookups.withLock { $0 } == 2)
    }
}
