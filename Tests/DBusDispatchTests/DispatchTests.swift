// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
import UserActivityCore
@testable import UserActivityService

private let editType = "com.example.Editor.edit-document"
private let claimEditor: (String, TypedValue) = ("app-id", .string(ServiceHarness.editor))
private let errorPrefix = "org.example.UserActivity.Error."

@Suite struct DispatchTests {
    @Test func signatureIsCheckedBeforeTheHandlerRuns() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        #expect(dbusErrorName { try client.callService(managerInterface, "CreateActivity", [.string(editType)]) }
                == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(dbusErrorName { try client.callService(managerInterface, "CreateActivity", [.string(editType), .int32(1)]) }
                == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(dbusErrorName { try client.callService(managerInterface, "NoSuchMethod") }
                == "org.freedesktop.DBus.Error.UnknownMethod")
        // The daemon is still serving.
        #expect(try client.property(managerPath, managerInterface, "Version") == .string("0.1.0"))
    }

    /// A call's signals leave right after its reply, before anything sent
    /// right behind it is answered (even a `Peer.Ping`, which libdbus answers
    /// itself), and carry the activity as the call left it.
    @Test func signalsKeepTheirPlaceAmongRepliesToCallsSentRightBehind() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        try client.addMatch("type='signal',sender='org.example.UserActivity',interface='org.freedesktop.DBus.ObjectManager'")
        var received: [String] = []
        var addedTitle: TypedValue?
        try client.addFilter { message in
            switch message.kind {
            case .signal where message.interface == "org.freedesktop.DBus.ObjectManager":
                received.append(message.member ?? "")
                if message.member == "InterfacesAdded", let arguments = try? message.arguments(),
                   case .dictionary(_, _, let interfaces) = arguments[1],
                   let properties = interfaces.first?.value.stringVariantEntries {
                    addedTitle = properties.first { $0.0 == "Title" }?.1.unwrappedVariant
                }
            case .methodReturn: received.append("reply \(message.replySerial)")
            case .error: received.append("error \(message.replySerial) \(message.errorName ?? "")")
            default: return false
            }
            return true
        }
        func call(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = []) throws -> Message {
            let message = Message.methodCall(destination: "org.example.UserActivity", path: path, interface: interface, member: member)
            try message.append(arguments)
            client.send(message)
            return message
        }
        // The service sends activity signals only to connections that asked for them.
        try client.callService(managerInterface, "Subscribe")
        // A first activity, so that the calls below find the caller's
        // identity known. Activity ids are serial numbers: the next is "2".
        let first = try client.createActivity(editType, [claimEditor])
        #expect(first == managerPath + "/activity/1")
        _ = waitUntil(timeout: 30) {
            client.readWriteDispatch(timeoutMilliseconds: 20)
            return received == ["InterfacesAdded"]
        }
        received.removeAll()
        let path = managerPath + "/activity/2"
        let create = try call(managerPath, managerInterface, "CreateActivity",
                              [.string(editType), .stringVariantDictionary([claimEditor, ("title", .string("Draft"))])])
        let invalidate = try call(path, activityInterface, "Invalidate")
        let ping = try call(managerPath, "org.freedesktop.DBus.Peer", "Ping")
        let objects = try call(managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        client.flush()
        _ = waitUntil(timeout: 30) {
            client.readWriteDispatch(timeoutMilliseconds: 20)
            return received.count >= 6
        }
        #expect(received == ["reply \(create.serial)", "InterfacesAdded", "reply \(invalidate.serial)",
                             "InterfacesRemoved", "reply \(ping.serial)", "reply \(objects.serial)"])
        // The whole activity, though the Invalidate was already waiting when the signal was built.
        #expect(addedTitle == .string("Draft"))
    }

    /// A new connection's first call waits for the caller's identity (a
    /// query to the bus). Calls sent right behind it, even ones answered
    /// without an identity, must not overtake it: replies come in the order
    /// the calls were sent.
    @Test func callsBehindAConnectionsFirstCallAreAnsweredAfterIt() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        var answered: [UInt32] = []
        try client.addFilter { message in
            guard message.kind == .methodReturn || message.kind == .error else { return false }
            answered.append(message.replySerial)
            return true
        }
        func send(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = []) throws -> UInt32 {
            let message = Message.methodCall(destination: "org.example.UserActivity", path: path, interface: interface, member: member)
            try message.append(arguments)
            client.send(message)
            return message.serial
        }
        let sent = [
            try send(managerPath, managerInterface, "CreateActivity", [.string(editType), .stringVariantDictionary([claimEditor])]),
            // No identity needed for these: an object that does not exist, introspection, a wrong signature.
            try send(managerPath + "/activity/999", activityInterface, "Invalidate"),
            try send(managerPath, "org.freedesktop.DBus.Introspectable", "Introspect"),
            try send(managerPath, managerInterface, "CreateActivity"),
            try send(managerPath, managerInterface, "RegisterApplication", [.string("com.example.Editor")]),
        ]
        client.flush()
        _ = waitUntil(timeout: 30) {
            client.readWriteDispatch(timeoutMilliseconds: 20)
            return answered.count >= sent.count
        }
        #expect(answered == sent)
    }

    @Test func everyUserInfoTypeRoundTripsOverTheBus() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        let nan = Double(bitPattern: 0x7ff8_0000_0000_0123)
        let info = TypedValue.stringVariantDictionary([
            ("y", .byte(255)), ("b", .boolean(false)), ("n", .int16(.min)), ("q", .uint16(.max)), ("i", .int32(-7)),
            ("u", .uint32(.max)), ("x", .int64(.min)), ("t", .uint64(.max)), ("d", .double(nan)), ("neg0", .double(-0.0)),
            ("s", .string("Grüße, 世界")), ("empty", .array(elementType: "a{sv}", [])),
            ("nested", .array(elementType: "aai", [.array(elementType: "ai", [.array(elementType: "i", [.int32(1)])])])),
            ("dict", .dictionary(keyType: "t", valueType: "(sv)", [.init(key: .uint64(9), value: .structure([.string("k"), .variant(.variant(.byte(1)))]))])),
        ])
        let path = try client.createActivity(editType, [claimEditor, ("user-info", info)])
        let served = try client.property(path, activityInterface, "UserInfo")
        #expect(served.isIdentical(to: info))
    }

    @Test func updateIsAtomicAndEmitsOnePropertiesChanged() throws {
        let harness = try ServiceHarness()
        let owner = try harness.client()
        let watcher = try harness.client()
        try watcher.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        // The service sends activity signals only to connections that asked for them.
        try watcher.callService(managerInterface, "Subscribe")
        let path = try owner.createActivity(editType, [claimEditor, ("title", .string("One"))])
        try owner.callService(on: path, activityInterface, "Update",
                              [.stringVariantDictionary([("title", .string("Two")), ("keywords", .stringArray(["a", "b"]))])])
        // A failing update changes nothing.
        #expect(dbusErrorName {
            try owner.callService(on: path, activityInterface, "Update",
                                  [.stringVariantDictionary([("title", .string("Three")), ("webpage-url", .string("ftp://x"))])])
        } == errorPrefix + "InvalidArgument")
        #expect(try owner.property(path, activityInterface, "Title") == .string("Two"))

        var changes: [[String]] = []
        try watcher.addFilter { message in
            if message.member == "PropertiesChanged", message.path == path,
               let entries = (try? message.arguments())?[1].stringVariantEntries {
                changes.append(entries.map(\.0))
            }
            return false
        }
        _ = waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 50)
            return !changes.isEmpty
        }
        #expect(changes.first == ["Title", "Keywords"])
    }

    @Test func currentActivityFollowsBecomeCurrentResignAndInvalidate() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        let a = try client.createActivity(editType, [claimEditor])
        let b = try client.createActivity("com.example.Viewer.view", [("app-id", .string(ServiceHarness.viewer))])
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath("/"))
        try client.callService(on: a, activityInterface, "BecomeCurrent")
        #expect(try client.property(a, activityInterface, "Current") == .boolean(true))
        try client.callService(on: b, activityInterface, "BecomeCurrent")
        #expect(try client.property(a, activityInterface, "Current") == .boolean(false))
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath(b))
        try client.callService(on: a, activityInterface, "ResignCurrent")
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath(b))
        try client.callService(on: b, activityInterface, "Invalidate")
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath("/"))
        #expect(dbusErrorName { try client.callService(on: b, activityInterface, "BecomeCurrent") }
                == "org.freedesktop.DBus.Error.UnknownObject")
    }

    @Test func anotherAppsActivityCannotBeChanged() throws {
        let harness = try ServiceHarness()
        let editor = try harness.client()
        let viewer = try harness.client()
        try viewer.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.viewer)])
        let path = try editor.createActivity(editType, [claimEditor])
        for member in ["BecomeCurrent", "ResignCurrent", "Invalidate"] {
            #expect(dbusErrorName { try viewer.callService(on: path, activityInterface, member) } == errorPrefix + "AccessDenied")
        }
        #expect(dbusErrorName {
            try viewer.callService(on: path, "org.freedesktop.DBus.Properties", "Set",
                                   [.string(activityInterface), .string("Title"), .variant(.string("mine"))])
        } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName {
            try editor.callService(on: path, "org.freedesktop.DBus.Properties", "Set",
                                   [.string(activityInterface), .string("AppId"), .variant(.string("x.y"))])
        } == "org.freedesktop.DBus.Error.PropertyReadOnly")
        try editor.callService(on: path, "org.freedesktop.DBus.Properties", "Set",
                               [.string(activityInterface), .string("Title"), .variant(.string("ok"))])
        #expect(try viewer.property(path, activityInterface, "Title") == .string("ok"), "unconfined callers may read")
    }

    @Test func ownerConnectionClosingInvalidatesItsActivities() throws {
        let harness = try ServiceHarness()
        let observer = try harness.client()
        var path = ""
        do {
            let owner = try harness.client()
            path = try owner.createActivity(editType, [claimEditor], becomeCurrent: true)
            #expect(try observer.property(managerPath, managerInterface, "CurrentActivity") == .objectPath(path))
            owner.close()
        }
        let cleared = waitUntil(timeout: 30) {
            (try? observer.property(managerPath, managerInterface, "CurrentActivity")) == .objectPath("/")
        }
        #expect(cleared)
        #expect(dbusErrorName { _ = try observer.property(path, activityInterface, "Title") } == "org.freedesktop.DBus.Error.UnknownObject")
    }

    @Test func managedObjectsListLiveActivities() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        let path = try client.createActivity(editType, [claimEditor, ("title", .string("Doc"))])
        let reply = try client.callService(on: managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        guard case .dictionary("o", "a{sa{sv}}", let entries)? = reply.first else {
            Issue.record("unexpected reply \(reply)")
            return
        }
        #expect(entries.map(\.key) == [.objectPath(path)])
    }
}

@Suite struct ConfinedCallerTests {
    @Test func aSandboxedAppActsOnlyForItself() throws {
        let harness = try ServiceHarness(confinedAs: ServiceHarness.sandboxed)
        let client = try harness.client()
        // Its own type, with no claim: identified from .flatpak-info.
        let own = try client.createActivity("com.example.Sandboxed.play", [])
        #expect(try client.property(own, activityInterface, "AppId") == .string(ServiceHarness.sandboxed))
        // Naming another app, per call or per connection.
        #expect(dbusErrorName { _ = try client.createActivity(editType, [claimEditor]) } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)]) }
                == errorPrefix + "AccessDenied")
        // Naming itself is fine; a malformed name is InvalidArgument first.
        try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.sandboxed)])
        #expect(dbusErrorName { _ = try client.createActivity(editType, [("app-id", .string("not valid"))]) } == errorPrefix + "InvalidArgument")
        #expect(dbusErrorName { _ = try client.createActivity(editType, []) } == errorPrefix + "NotDeclared")
    }

    @Test func aProcessStartedAfterItsConnectionAppearedIsNotBelieved() throws {
        // The fixture /proc says our PID belongs to a plain host process; its
        // start time decides whether that process can be the one that connected.
        // That check is for buses that give only a PID: the system's dbus-daemon,
        // whichever bus the other tests run on (on a bus that offers ProcessFD
        // the pidfd is the connecting process; PIDReuseTests covers that bus).
        let harness = try ServiceHarness(confinedAs: ServiceHarness.sandboxed, daemonPath: "dbus-daemon")
        let me = harness.procRoot.appending("\(getpid())")
        try FileManager.default.removeItem(atPath: me + "/root/.flatpak-info")
        try writeFileAtomically(me + "/cgroup", contents: "0::/user.slice/user@1000.service/app.slice/vte-spawn-1.scope\n")

        // Started long before: a host caller, whose claims are believed.
        let before = try harness.client()
        try before.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])

        // Started after the connection appeared: its PID was reused, so the
        // evidence is about another process; confined with no app.
        let later = ProcessIdentityProbe.ticksSinceBoot() + 60 * 100
        try writeFileAtomically(me + "/stat", contents: fakeProcessStat(pid: getpid(), startTicks: later))
        let after = try harness.client()
        #expect(dbusErrorName { try after.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)]) }
                == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { _ = try after.property(managerPath, managerInterface, "Paused") } == errorPrefix + "AccessDenied")
    }

    @Test func aSandboxedAppCannotTouchOrReadAHostAppsActivity() throws {
        let harness = try ServiceHarness(confinedAs: ServiceHarness.sandboxed)
        // A host process creates and holds an activity. The probe fails closed for a
        // PID missing from the procfs tree, so the holder waits until its host entry exists.
        let goFile = harness.procRoot.appending("go")
        let holder = try harness.bus.spawn("/usr/bin/python3", ["-c", """
            import os, sys, time
            from gi.repository import Gio, GLib
            while not os.path.exists(sys.argv[1]): time.sleep(0.01)
            bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            r = bus.call_sync('org.example.UserActivity', '/org/example/UserActivity', 'org.example.UserActivity',
                'CreateActivity', GLib.Variant('(sa{sv})', ('com.example.Editor.edit-document', {'app-id': GLib.Variant('s', 'com.example.Editor')})),
                None, 0, -1, None)
            print(r.unpack()[0], flush=True)
            time.sleep(3600)
            """, goFile])
        defer { holder.kill() }
        try harness.procRoot.makeDirectory("\(holder.pid)/root")
        try writeFileAtomically(harness.procRoot.appending("\(holder.pid)/cgroup"), contents: "0::/user.slice/user@1000.service/app.slice/other.scope\n")
        try writeFileAtomically(harness.procRoot.appending("\(holder.pid)/stat"), contents: fakeProcessStat(pid: holder.pid))
        try writeFileAtomically(goFile, contents: "")
        let path = try #require(try holder.readLine(timeout: 10))
        let client = try harness.client()
        #expect(dbusErrorName { try client.callService(on: path, activityInterface, "Invalidate") } == errorPrefix + "AccessDenied")
        #expect(dbusErrorName { _ = try client.property(path, activityInterface, "Title") } == errorPrefix + "AccessDenied")
        let reply = try client.callService(on: managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        #expect(reply.first == .dictionary(keyType: "o", valueType: "a{sa{sv}}", []), "a sandbox sees only its own activities")
    }
}

@Suite struct IntrospectionTests {
    /// The repository's documented contract.
    static func documentedXML() throws -> String {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("dbus/org.example.UserActivity.xml")
            if FileManager.default.fileExists(atPath: candidate.path) { return try String(contentsOf: candidate, encoding: .utf8) }
            directory.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }

    @Test func theDocumentedXMLIsWhatTheTablesGenerate() throws {
        #expect(try Self.documentedXML() == Interfaces.documentedXML(),
                "dbus/org.example.UserActivity.xml is stale: regenerate it with `useractivityd --print-introspection > dbus/org.example.UserActivity.xml`")
    }

    @Test func theServedXMLContainsTheDocumentedInterfaces() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        let documented = try Self.documentedXML()
        let managerXML = try client.callService(on: managerPath, "org.freedesktop.DBus.Introspectable", "Introspect").first?.stringValue ?? ""
        let path = try client.createActivity(editType, [claimEditor])
        let activityXML = try client.callService(on: path, "org.freedesktop.DBus.Introspectable", "Introspect").first?.stringValue ?? ""
        for (served, interface) in [(managerXML, Interfaces.manager), (activityXML, Interfaces.activity)] {
            let block = interface.xml()
            #expect(documented.contains(block))
            #expect(served.contains(block))
        }
        #expect(managerXML.contains("<node name=\"activity\"/>"))
        #expect(managerXML.contains("org.freedesktop.DBus.ObjectManager"))
    }

    @Test func everyDocumentedMethodHasInputSignatureChecks() throws {
        // Every documented method is dispatched (never UnknownMethod) and takes its documented signature.
        let harness = try ServiceHarness()
        let client = try harness.client()
        for method in Interfaces.manager.methods {
            let arguments: [TypedValue] = method.inputs.map { sampleValue($0.signature) }
            let error = dbusErrorName { try client.callService(managerInterface, method.name, arguments) }
            #expect(error != "org.freedesktop.DBus.Error.UnknownMethod" && error != "org.freedesktop.DBus.Error.InvalidArgs",
                    "\(method.name) answered \(error ?? "ok")")
        }
    }
}

private func sampleValue(_ signature: String) -> TypedValue {
    switch signature {
    case "s": return .string("com.example.Nobody.none") // nobody declares it: no app is launched
    case "o": return .objectPath("/app")
    case "u": return .uint32(1)
    case "x": return .int64(0)
    case "as": return .stringArray([])
    default: return .stringVariantDictionary([])
    }
}

@Suite struct MarshalledSizeTests {
    @Test(arguments: 0..<40)
    func sizeMatchesLibdbus(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed + 1))
        let value = TypedValue.stringVariantDictionary((0..<Int.random(in: 0...6, using: &generator)).map {
            ("k\($0)", randomValue(depth: 0, using: &generator))
        })
        let message = Message.methodCall(destination: nil, path: "/", interface: "a.b", member: "C")
        try message.append([value])
        #expect(try message.marshalledBodyLength() == value.marshalledSize, "\(value.signature)")
    }
}

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state ^ (state >> 29)
    }
}

func randomValue(depth: Int, using generator: inout SeededGenerator) -> TypedValue {
    let choice = Int.random(in: 0..<(depth > 3 ? 10 : 14), using: &generator)
    switch choice {
    case 0: return .byte(.random(in: 0...255, using: &generator))
    case 1: return .boolean(.random(using: &generator))
    case 2: return .int16(.random(in: .min ... .max, using: &generator))
    case 3: return .uint32(.random(in: 0 ... .max, using: &generator))
    case 4: return .int64(.random(in: .min ... .max, using: &generator))
    case 5: return .double(.random(in: -1e9...1e9, using: &generator))
    case 6, 7: return .string(String(repeating: "é", count: Int.random(in: 0...9, using: &generator)))
    case 8: return .uint16(.random(in: 0 ... .max, using: &generator))
    case 9: return .uint64(.random(in: 0 ... .max, using: &generator))
    case 10: return .variant(randomValue(depth: depth + 1, using: &generator))
    case 11: return .structure([randomValue(depth: depth + 1, using: &generator), .byte(1)])
    case 12: return .array(elementType: "x", (0..<Int.random(in: 0...3, using: &generator)).map { .int64(Int64($0)) })
    default:
        return .dictionary(keyType: "s", valueType: "v", (0..<Int.random(in: 0...3, using: &generator)).map {
            .init(key: .string("n\($0)"), value: .variant(randomValue(depth: depth + 1, using: &generator)))
        })
    }
}
