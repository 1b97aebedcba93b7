// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivityService

private let editType = "com.example.Editor.edit-document"
private let claimEditor: (String, TypedValue) = ("app-id", .string(ServiceHarness.editor))

/// The activity signals are unicast copies, so match rules do not choose
/// them: the service sends them only to connections that asked
/// (`GetManagedObjects`, `Subscribe`, a property read), never to one that
/// only acts.
@Suite("Who is sent the activity signals")
struct SignalSubscriptionTests {
    /// A connection that counts every signal the service sends it (the bus
    /// driver's own, such as `NameAcquired`, aside), with no match rule added.
    final class SignalCounter {
        let connection: Connection
        private(set) var received: [String] = []
        private var answered: Set<UInt32> = []

        init(_ connection: Connection) throws {
            self.connection = connection
            try connection.addFilter { [unowned self] message in
                if message.kind == .signal, message.sender != "org.freedesktop.DBus" {
                    received.append("\(message.path ?? "") \(message.interface ?? "").\(message.member ?? "")")
                } else if message.kind == .methodReturn {
                    answered.insert(message.replySerial)
                }
                return false
            }
        }

        /// A round trip dispatched through the filter: every signal the
        /// service sent this connection before answering has been counted by
        /// the time the answer is (one outgoing queue, in order).
        func settle() throws {
            let message = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                             interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
            connection.send(message)
            let serial = message.serial
            #expect(wait { _ in answered.contains(serial) }, "no answer to Introspect")
        }

        /// Dispatches until `predicate` holds (30 s at most).
        func wait(_ predicate: ([String]) -> Bool) -> Bool {
            waitUntil(timeout: 30) {
                connection.readWriteDispatch(timeoutMilliseconds: 20)
                return predicate(received)
            }
        }
    }

    @Test("A client that creates, updates, makes current and donates is sent no activity signal")
    func actingCallsSubscribeNobody() throws {
        let harness = try ServiceHarness()
        let actor = try SignalCounter(harness.client())
        // A listener of everything: the calls below do cause signals.
        let listener = try SignalCounter(harness.client())
        try listener.connection.callService(managerInterface, "Subscribe")

        let first = try actor.connection.createActivity(editType, [claimEditor, ("title", .string("One"))])
        try actor.connection.callService(on: first, activityInterface, "Update", [.stringVariantDictionary([("title", .string("Two"))])])
        try actor.connection.callService(on: first, activityInterface, "AddUserInfoEntries", [.stringVariantDictionary([("page", .uint32(2))])])
        try actor.connection.callService(on: first, activityInterface, "BecomeCurrent")
        let second = try actor.connection.createActivity(editType, [claimEditor, ("title", .string("Three"))], becomeCurrent: true)
        try actor.connection.callService(on: second, activityInterface, "ResignCurrent")
        try actor.connection.callService(managerInterface, "Donate", [.string(editType), .stringVariantDictionary([claimEditor, ("title", .string("Saved"))])])
        try actor.connection.callService(managerInterface, "Search", [.string("Saved"), .stringVariantDictionary([])])
        try actor.connection.callService(managerInterface, "GetSuggestions", [.stringVariantDictionary([])])
        try actor.connection.callService(on: second, activityInterface, "Invalidate")

        #expect(listener.wait { $0.contains("\(managerPath) org.freedesktop.DBus.ObjectManager.InterfacesRemoved") },
                "the listener was sent \(listener.received)")
        #expect(listener.received.filter { $0.hasSuffix("PropertiesChanged") }.count >= 5, "\(listener.received)")
        try actor.settle()
        #expect(actor.received.isEmpty, "the acting client was sent \(actor.received)")
    }

    @Test("A subscribed connection is sent the signals, and nothing after Unsubscribe")
    func subscribeAndUnsubscribe() throws {
        let harness = try ServiceHarness()
        let owner = try harness.client()
        let watcher = try SignalCounter(harness.client())
        try watcher.connection.callService(managerInterface, "Subscribe")
        // Subscribing twice is one subscription: every signal comes once.
        try watcher.connection.callService(managerInterface, "Subscribe")
        let path = try owner.createActivity(editType, [claimEditor, ("title", .string("Watched"))], becomeCurrent: true)
        #expect(watcher.wait { $0.count >= 3 }, "\(watcher.received)")
        try watcher.settle()
        #expect(watcher.received.sorted() == [
            "\(managerPath) org.freedesktop.DBus.ObjectManager.InterfacesAdded",
            "\(managerPath) org.freedesktop.DBus.Properties.PropertiesChanged",
            "\(path) org.freedesktop.DBus.Properties.PropertiesChanged",
        ], "\(watcher.received)")

        try watcher.connection.callService(managerInterface, "Unsubscribe")
        let seen = watcher.received.count
        try owner.callService(on: path, activityInterface, "Update", [.stringVariantDictionary([("title", .string("Unwatched"))])])
        _ = try owner.createActivity(editType, [claimEditor])
        try owner.callService(on: path, activityInterface, "Invalidate")
        try watcher.settle()
        #expect(watcher.received.count == seen, "sent after Unsubscribe: \(watcher.received.dropFirst(seen))")
        // Unsubscribe also ends what GetManagedObjects started; a second one is a no-op.
        try watcher.connection.callService("org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        try watcher.connection.callService(managerInterface, "Unsubscribe")
        try watcher.connection.callService(managerInterface, "Unsubscribe")
        _ = try owner.createActivity(editType, [claimEditor])
        try watcher.settle()
        #expect(watcher.received.count == seen, "sent after Unsubscribe: \(watcher.received.dropFirst(seen))")
    }

    @Test("A subscribed connection that closes is forgotten")
    func disconnectEndsTheSubscription() throws {
        let harness = try ServiceHarness()
        let watcher = try harness.client()
        try watcher.callService(managerInterface, "Subscribe")
        let reader = try harness.client()
        let owner = try harness.client()
        let path = try owner.createActivity(editType, [claimEditor])
        _ = try reader.property(path, activityInterface, "Title")
        #expect(!harness.onService { $0.callers.subscriptions.isEmpty })
        watcher.close()
        reader.close()
        // The service learns of it from NameOwnerChanged, in its own time.
        #expect(waitUntil(timeout: 30) { harness.onService { $0.callers.subscriptions.isEmpty } })
        // The activity is still there, and nobody listens to it.
        #expect(harness.onService { $0.callers.readers(of: ServiceHarness.editor, .activity(String(path.split(separator: "/").last!))) }.isEmpty)
    }

    @Test("Reading an activity's properties follows that activity only; reading the manager's, the manager's")
    func propertyReadsFollowWhatTheyRead() throws {
        let harness = try ServiceHarness()
        let owner = try harness.client()
        let first = try owner.createActivity(editType, [claimEditor, ("title", .string("First"))])
        let second = try owner.createActivity(editType, [claimEditor, ("title", .string("Second"))])

        // What a GDBusProxy of the first activity does when it loads its properties.
        let proxy = try SignalCounter(harness.client())
        try proxy.connection.callService(on: first, "org.freedesktop.DBus.Properties", "GetAll", [.string(activityInterface)])
        // What a GDBusProxy of the manager does.
        let managerProxy = try SignalCounter(harness.client())
        try managerProxy.connection.callService("org.freedesktop.DBus.Properties", "GetAll", [.string(managerInterface)])

        try owner.callService(on: first, activityInterface, "Update", [.stringVariantDictionary([("title", .string("First, again"))])])
        try owner.callService(on: second, activityInterface, "Update", [.stringVariantDictionary([("title", .string("Second, again"))])])
        try owner.callService(on: second, activityInterface, "BecomeCurrent")
        _ = try owner.createActivity(editType, [claimEditor])
        try owner.callService(on: first, activityInterface, "Invalidate")

        try proxy.settle()
        #expect(proxy.received == [
            "\(first) org.freedesktop.DBus.Properties.PropertiesChanged",
            "\(managerPath) org.freedesktop.DBus.ObjectManager.InterfacesRemoved",
        ], "\(proxy.received)")
        try managerProxy.settle()
        // Second became current (CurrentActivity); nothing about the activities themselves.
        #expect(managerProxy.received == ["\(managerPath) org.freedesktop.DBus.Properties.PropertiesChanged"], "\(managerProxy.received)")
    }
}
