// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// useractivity-handoffd builds adverts from useractivityd's signals without
/// reading the properties again: a change of the current activity reaches the
/// other device, and a signal forged by another connection does not.
@Suite("Handoff adverts follow the service's signals", .serialized)
struct AdvertSignalTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    /// Every title B's device shows as its CurrentActivity, in order.
    final class TitleWatcher {
        let connection: Connection
        private(set) var titles: [String] = []

        init(stack: Stack, devicePath: String) throws {
            connection = try Connection.bus(address: stack.bus.address)
            try connection.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='\(devicePath)'")
            try connection.addFilter { [weak self] message in
                if let arguments = try? message.arguments(), arguments.count >= 2,
                   let activity = arguments[1].stringVariantEntries?.first(where: { $0.0 == "CurrentActivity" })?.1,
                   let title = activity.stringVariantEntries?.first(where: { $0.0 == "title" })?.1.stringValue {
                    self?.titles.append(title)
                }
                return false
            }
        }

        func waitFor(_ title: String) -> Bool {
            waitUntil(timeout: 30, interval: 0) {
                connection.readWriteDispatch(timeoutMilliseconds: 20)
                return titles.last == title
            }
        }

        deinit { connection.close() }
    }

    /// Two paired stacks, a watcher of B's device for A, and an activity of A
    /// titled `title`, current and seen on B.
    func pairedWithCurrent(_ title: String) throws -> (TwoStacks, TitleWatcher, activity: String) {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let (_, onB) = try stacks.pair()
        let watcher = try TitleWatcher(stack: stacks.b, devicePath: onB)
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string(title))])
        #expect(watcher.waitFor(title), "\(stacks.logs)")
        return (stacks, watcher, activity)
    }

    @Test func aChangedTitleOfTheCurrentActivityReachesTheOtherDevice() throws {
        let (stacks, watcher, activity) = try pairedWithCurrent("Draft")
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Update",
                              [.stringVariantDictionary([("title", .string("Final"))])])
        #expect(watcher.waitFor("Final"), "\(stacks.logs)")
        // Another activity becoming current, then this one again: its copy is still right.
        let other = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Other"))])
        #expect(watcher.waitFor("Other"), "\(stacks.logs)")
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "BecomeCurrent")
        #expect(watcher.waitFor("Final"), "\(stacks.logs)")
        _ = try stacks.a.call(UA.busName, other, UA.activityInterface, "Invalidate")
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Update",
                              [.stringVariantDictionary([("title", .string("After the other ended"))])])
        #expect(watcher.waitFor("After the other ended"), "\(stacks.logs)")
    }

    @Test func aSignalForgedByAnotherConnectionChangesNoAdvert() throws {
        let (stacks, watcher, activity) = try pairedWithCurrent("Genuine 1")

        // A client of A's bus addresses handoffd directly with the service's signals.
        let forger = try Connection.bus(address: stacks.a.bus.address)
        defer { forger.close() }
        let handoffd = try #require(forger.callBus("GetNameOwner", [.string(HO.busName)]).first?.stringValue)
        let forgeries: [(String, String, [TypedValue])] = [
            (activity, "org.freedesktop.DBus.Properties", [
                .string(UA.activityInterface), .stringVariantDictionary([("Title", .string("Forged title"))]), .stringArray([]),
            ]),
            (UA.managerPath, "org.freedesktop.DBus.ObjectManager", [
                .objectPath(UA.activityPathPrefix + "forged"),
                .dictionary(keyType: "s", valueType: "a{sv}", [.init(key: .string(UA.activityInterface), value: .stringVariantDictionary([
                    ("ActivityType", .string(UA.editType)), ("AppId", .string(UA.editor)), ("Title", .string("Forged activity")),
                ]))]),
            ]),
            (UA.managerPath, "org.freedesktop.DBus.Properties", [
                .string(UA.managerInterface), .stringVariantDictionary([("CurrentActivity", .objectPath(UA.activityPathPrefix + "forged"))]),
                .stringArray([]),
            ]),
        ]
        for (path, interface, arguments) in forgeries {
            let member = interface.hasSuffix("ObjectManager") ? "InterfacesAdded" : "PropertiesChanged"
            let signal = try Message.signal(path: path, interface: interface, member: member, arguments: arguments)
            let addressed = try #require(signal.copy(addressedTo: handoffd))
            #expect(forger.send(addressed))
        }
        // handoffd has handled the forgeries once it answers a call sent after them on the same connection.
        let ping = Message.methodCall(destination: handoffd, path: HO.managerPath, interface: "org.freedesktop.DBus.Peer", member: "Ping")
        _ = try forger.call(ping, timeoutMilliseconds: 30_000)

        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Update",
                              [.stringVariantDictionary([("title", .string("Genuine 2"))])])
        #expect(watcher.waitFor("Genuine 2"), "\(stacks.logs)")
        #expect(!watcher.titles.contains { $0.hasPrefix("Forged") }, "\(watcher.titles)")
    }
}
