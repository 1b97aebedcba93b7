// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Live activities: lifetime, object manager, properties, expiry")
struct LiveActivityTests {
    @Test("A client that disconnects while its activity is current: CurrentActivity becomes / and the object leaves")
    func disconnectWhileCurrent() throws {
        let h = try DaemonHarness()
        try h.activate()
        let monitor = try h.monitor([DaemonSignal.rule(interface: "org.freedesktop.DBus.ObjectManager")])

        let app = try h.connect()
        let path = try app.create(UA.editType, app: UA.editor, [("title", .string("Open document"))], becomeCurrent: true)
        // busctl --user get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity CurrentActivity
        #expect(try h.currentActivity() == path)
        #expect(jsonBool(try h.activityProperty(path, "Current")) == true)

        app.close()
        let cleared = try waitUntil(timeout: 30, interval: 0.05) { try h.currentActivity() == "/" }
        let currentNow = try h.currentActivity()
        #expect(cleared, "CurrentActivity still \(currentNow) 30 s after the owner disconnected\n\(h.logTail(30))")

        let get = try h.gdbusCall(path: path, "org.freedesktop.DBus.Properties.Get", [UA.activityInterface, "Title"])
        #expect(get.gdbusErrorName == UA.unknownObject, "\(get)")
        let busctl = try h.busctl(["get-property", UA.busName, path, UA.activityInterface, "Title"], debug: true)
        #expect(busctl.busctlErrorName == UA.unknownObject, "\(busctl.stderr.suffix(400))")
        #expect(try h.managedObjects().isEmpty)

        let seen = monitor.wait(timeout: 5) { signals in
            signals.contains { $0.member == "InterfacesRemoved" && $0.arguments.first?.objectPathValue == path }
        }
        #expect(seen, "InterfacesRemoved(\(path)) not seen: \(monitor.signals.map { "\($0.member) \($0.arguments.first.map { "\($0)" } ?? "")" })")
        #expect(monitor.signals.contains { $0.member == "InterfacesAdded" && $0.arguments.first?.objectPathValue == path })
    }

    @Test("ObjectManager: GetManagedObjects lists live activities; InterfacesAdded/Removed are emitted")
    func objectManager() throws {
        let h = try DaemonHarness()
        try h.activate()
        let monitor = try h.monitor([DaemonSignal.rule(interface: "org.freedesktop.DBus.ObjectManager")])
        #expect(try h.managedObjects().isEmpty)

        let app = try h.connect()
        let userInfo: TypedValue = .stringVariantDictionary([("page", .uint32(3)), ("zoom", .double(1.5))])
        let path = try app.create(UA.editType, app: UA.editor, [
            ("title", .string("Quarterly report")), ("keywords", .stringArray(["q3", "finance"])),
            ("user-info", userInfo),
        ])

        let added = monitor.wait(timeout: 5) { signals in
            signals.contains { $0.member == "InterfacesAdded" && $0.arguments.first?.objectPathValue == path }
        }
        #expect(added, "InterfacesAdded(\(path)) not seen")
        if let signal = monitor.signals.first(where: { $0.member == "InterfacesAdded" }),
           case .dictionary("s", "a{sv}", let interfaces)? = signal.arguments.dropFirst().first {
            #expect(interfaces.map(\.key) == [.string(UA.activityInterface)])
            let properties = interfaces.first?.value.stringVariantEntries.map { Dictionary($0, uniquingKeysWith: { a, _ in a }) } ?? [:]
            #expect(properties["Title"] == .string("Quarterly report"))
            #expect(properties["AppId"] == .string(UA.editor))
            #expect(properties["UserInfo"] == userInfo)
        } else {
            Issue.record("InterfacesAdded has no a{sa{sv}}: \(monitor.signals)")
        }

        // busctl --user --json=short call org.example.UserActivity /org/example/UserActivity org.freedesktop.DBus.ObjectManager GetManagedObjects
        let objects = try h.managedObjects()
        #expect(Array(objects.keys) == [path])
        let properties = try #require(objects[path])
        #expect(properties["Title"] as? String == "Quarterly report")
        #expect(properties["AppId"] as? String == UA.editor)
        #expect(properties["ActivityType"] as? String == UA.editType)
        #expect(properties["Keywords"] as? [String] == ["q3", "finance"])
        #expect(jsonBool(properties["Current"]) == false)
        #expect(jsonBool(properties["EligibleForHandoff"]) == true, "default true")
        #expect(jsonBool(properties["EligibleForSearch"]) == false, "default false")
        let expectedNames: Set<String> = [
            "ActivityType", "AppId", "Title", "UserInfo", "RequiredUserInfoKeys", "Keywords", "ContentDescription",
            "ContentAttributes", "WebpageURL", "ReferrerURL", "TargetContentIdentifier", "PersistentIdentifier",
            "ExpirationDate", "EligibleForHandoff", "EligibleForSearch", "EligibleForPublicIndexing",
            "EligibleForPrediction", "SuggestedInvocationPhrase", "NeedsSave", "SupportsContinuationStreams", "Current",
        ]
        #expect(expectedNames.isSubset(of: Set(properties.keys)),
                "missing: \(expectedNames.subtracting(properties.keys).sorted())")

        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.freedesktop.DBus.ObjectManager.GetManagedObjects
        let gdbus = try h.gdbusCall("org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        #expect(gdbus.succeeded && gdbus.stdout.contains("objectpath '\(path)'"), "\(gdbus)")

        try app.activity(path, "Invalidate")
        let removed = monitor.wait(timeout: 5) { signals in
            signals.contains {
                $0.member == "InterfacesRemoved" && $0.arguments.first?.objectPathValue == path
                    && $0.arguments.dropFirst().first?.stringArrayValue == [UA.activityInterface]
            }
        }
        #expect(removed, "InterfacesRemoved(\(path), [\(UA.activityInterface)]) not seen: \(monitor.signals)")
        #expect(try h.managedObjects().isEmpty)
    }

    @Test("Properties: one PropertiesChanged per Update, Current transitions, read-only properties")
    func propertiesAndCurrentTransitions() throws {
        let h = try DaemonHarness()
        try h.activate()
        let monitor = try h.monitor([DaemonSignal.rule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")])
        let app = try h.connect()
        let x = try app.create(UA.editType, app: UA.editor, [("title", .string("One"))])

        // One Update of three properties → one signal with all three.
        try app.activity(x, "Update", [.stringVariantDictionary([
            ("title", .string("Two")), ("keywords", .stringArray(["a", "b"])),
            ("content-description", .string("A description")),
        ])])
        monitor.wait(timeout: 5) { $0.contains { $0.path == x } }
        monitor.drain(for: 0.3)
        let updates = monitor.signals.filter { $0.path == x }.compactMap(\.changedProperties)
        #expect(updates.count == 1, "expected one PropertiesChanged for one Update: \(updates)")
        if let update = updates.first {
            #expect(update.interface == UA.activityInterface)
            #expect(Set(update.changed.keys) == ["Title", "Keywords", "ContentDescription"])
            #expect(update.changed["Title"] == .string("Two"))
            #expect(update.changed["Keywords"] == .stringArray(["a", "b"]))
        }

        // Properties.Set of a writable property → one signal with just it.
        var mark = monitor.signals.count
        try app.setProperty(x, "Title", .string("Three"))
        monitor.wait(timeout: 5) { $0.dropFirst(mark).contains { $0.path == x } }
        monitor.drain(for: 0.2)
        let sets = monitor.signals.dropFirst(mark).filter { $0.path == x }.compactMap(\.changedProperties)
        #expect(sets.count == 1 && sets.first?.changed == ["Title": .string("Three")], "\(sets)")

        // Current transitions: x becomes current.
        func currentOf(_ path: String, in signals: ArraySlice<DaemonSignal>) -> [Bool] {
            signals.filter { $0.path == path }.compactMap { $0.changedProperties?.changed["Current"]?.boolValue }
        }
        func managerCurrent(in signals: ArraySlice<DaemonSignal>) -> [String] {
            signals.filter { $0.path == UA.managerPath }
                .compactMap { $0.changedProperties?.changed["CurrentActivity"]?.objectPathValue }
        }
        mark = monitor.signals.count
        try app.activity(x, "BecomeCurrent")
        var ok = monitor.wait(timeout: 5) { s in
            currentOf(x, in: s.dropFirst(mark)) == [true] && managerCurrent(in: s.dropFirst(mark)) == [x]
        }
        #expect(ok, "after x.BecomeCurrent: \(monitor.signals.dropFirst(mark).map { "\($0.path) \($0.arguments)" })")
        #expect(try h.currentActivity() == x)
        #expect(jsonBool(try h.activityProperty(x, "Current")) == true)

        // y becomes current: x stops being current.
        let y = try app.create(UA.editType, app: UA.editor, [("title", .string("Other"))])
        mark = monitor.signals.count
        try app.activity(y, "BecomeCurrent")
        ok = monitor.wait(timeout: 5) { s in
            currentOf(x, in: s.dropFirst(mark)) == [false] && currentOf(y, in: s.dropFirst(mark)) == [true]
                && managerCurrent(in: s.dropFirst(mark)) == [y]
        }
        #expect(ok, "after y.BecomeCurrent: \(monitor.signals.dropFirst(mark).map { "\($0.path) \($0.arguments)" })")
        #expect(jsonBool(try h.activityProperty(x, "Current")) == false)
        #expect(jsonBool(try h.activityProperty(y, "Current")) == true)
        #expect(try h.currentActivity() == y)

        // y resigns: nothing is current.
        mark = monitor.signals.count
        try app.activity(y, "ResignCurrent")
        ok = monitor.wait(timeout: 5) { s in
            currentOf(y, in: s.dropFirst(mark)) == [false] && managerCurrent(in: s.dropFirst(mark)) == ["/"]
        }
        #expect(ok, "after y.ResignCurrent: \(monitor.signals.dropFirst(mark).map { "\($0.path) \($0.arguments)" })")
        #expect(try h.currentActivity() == "/")
        #expect(jsonBool(try h.activityProperty(y, "Current")) == false)
        // Resigning when not current is a no-op, and the activity stays.
        try app.activity(x, "ResignCurrent")
        #expect(try h.managedObjects().count == 2)

        // Read-only properties.
        let readOnly: [(String, TypedValue)] = [
            ("ActivityType", .string("com.example.Editor.other")), ("AppId", .string(UA.viewer)), ("Current", .boolean(true)),
        ]
        for (name, value) in readOnly {
            #expect(dbusErrorName { try app.setProperty(x, name, value) } == UA.propertyReadOnly, "Set \(name)")
        }
        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.freedesktop.DBus.Properties.Set org.example.UserActivity Version "<'9.9'>"
        let version = try h.gdbusCall("org.freedesktop.DBus.Properties.Set", [UA.managerInterface, "Version", "<'9.9'>"])
        #expect(version.gdbusErrorName == UA.propertyReadOnly, "\(version)")
        let current = try h.gdbusCall("org.freedesktop.DBus.Properties.Set",
                                      [UA.managerInterface, "CurrentActivity", "<objectpath '\(x)'>"])
        #expect(current.gdbusErrorName == UA.propertyReadOnly, "\(current)")
        #expect(try h.activityProperty(x, "ActivityType") as? String == UA.editType)
    }

    @Test("Expiry: an expired current activity stops being current and cannot become current again")
    func expiredActivityStopsBeingCurrent() throws {
        let h = try DaemonHarness()
        try h.activate()
        let app = try h.connect()
        let expiration = nowMicroseconds() + 1_500_000
        let path = try app.create(UA.editType, app: UA.editor,
                                  [("title", .string("Short-lived")), ("expiration-date", .int64(expiration))],
                                  becomeCurrent: true)
        #expect(try h.currentActivity() == path)

        let cleared = try waitUntil(timeout: 30, interval: 0.05) { try h.currentActivity() == "/" }
        #expect(cleared, "still current 30 s after a 1.5 s expiration\n\(h.logTail(30))")
        #expect(nowMicroseconds() >= expiration, "stopped being current before its expiration date")

        #expect(dbusErrorName { try app.activity(path, "BecomeCurrent") } == UA.error("Expired"))
        // It stays on the bus until invalidated.
        #expect(try app.property(path, "Title") == .string("Short-lived"))
        #expect(try app.property(path, "ExpirationDate") == .int64(expiration))
        #expect(try app.property(path, "Current") == .boolean(false))
        #expect(try h.currentActivity() == "/")

        // An expiration date already past: Expired at creation.
        let past = try h.gdbusManager("CreateActivity",
                                      [UA.editType, "{'app-id': <'com.example.Editor'>, 'expiration-date': <int64 1000000>}"])
        #expect(past.gdbusErrorName == UA.error("Expired"), "\(past)")
    }
}
