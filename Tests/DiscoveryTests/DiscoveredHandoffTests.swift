// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// Two complete desktops (session bus, XDG dirs, useractivityd,
/// useractivity-handoffd) whose handoff daemons run inside the two network
/// namespaces of a ``TwoDesktopLink``: they find each other only through
/// Avahi, with no AddPeer.
@Suite("Handoff between two desktops that find each other through Avahi", .serialized)
struct DiscoveredHandoffTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    /// handoffd of desktop `index` inside its namespace, on its end of the link, with its system bus (and Avahi).
    static func placement(_ link: TwoDesktopLink, _ index: Int) -> HandoffStack.Placement {
        HandoffStack.Placement(listen: "\(link.desktops[index].address):0",
                               systemBusAddress: "unix:path=/run/dbus/system_bus_socket") { executable, arguments, environment in
            try link.spawn(in: index, executable, arguments, environment: environment)
        }
    }

    static func title(_ activity: TypedValue?) -> String? {
        activity?.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue
    }

    @Test("Both discoverable: each device appears on the other through Avahi (and goes while neither is discoverable), they pair, A's current activity shows on B and continues into B's handler, A hears Continued; after both daemons restart on new ports they reconnect through discovery",
          .enabled(if: TwoDesktopLink.skipReason == nil, "\(TwoDesktopLink.skipReason ?? "")"),
          .timeLimit(.minutes(4)))
    func discoverPairContinueAndReconnect() throws {
        let link = try TwoDesktopLink()
        defer { link.tearDown() }
        try #require(try link.waitForAvahi(0), "Avahi did not start in A\n\(link.logs)")
        try #require(try link.waitForAvahi(1), "Avahi did not start in B\n\(link.logs)")
        let a = try HandoffStack("A", apps: Self.apps, placement: Self.placement(link, 0))
        let b = try HandoffStack("B", apps: Self.apps, placement: Self.placement(link, 1))
        func logs() -> String {
            "--- A handoffd ---\n\(a.handoffLog.suffix(5000))\n--- B handoffd ---\n\(b.handoffLog.suffix(5000))\n\(link.logs.suffix(3000))"
        }
        for (stack, name) in [(a, "Desktop A"), (b, "Desktop B")] {
            try stack.set("DeviceName", .string(name))
            try stack.set("Enabled", .boolean(true))
            // No timeout: a loaded machine must not see the window close mid-test.
            try stack.set("DiscoverableTimeout", .uint32(0))
            try stack.set("Discoverable", .boolean(true))
        }
        _ = try a.startAgent(accept: true)
        _ = try b.startAgent(accept: true)

        // Each appears on the other by its name, at its namespace address: no AddPeer anywhere.
        let onA = a.devicePath(of: b), onB = b.devicePath(of: a)
        #expect(a.waitForDevice(onA, "Name", timeout: 60, { $0 == .string("Desktop B") }), "\(logs())")
        #expect(b.waitForDevice(onB, "Name", timeout: 60, { $0 == .string("Desktop A") }), "\(logs())")
        let addressOfB = try a.deviceProperties(onA)["Address"]?.stringValue ?? ""
        #expect(addressOfB.hasPrefix(link.desktops[1].address + ":"), "\(addressOfB)")
        #expect(try a.deviceProperties(onA)["Paired"] == .boolean(false))

        // Unpaired devices are listed only while they are discoverable: off on both, gone on both; on again, back.
        for stack in [a, b] { try stack.set("Discoverable", .boolean(false)) }
        #expect(waitUntil(timeout: 30) { (try? a.devicePaths().contains(onA)) == false }, "\(logs())")
        #expect(waitUntil(timeout: 30) { (try? b.devicePaths().contains(onB)) == false }, "\(logs())")
        for stack in [a, b] { try stack.set("Discoverable", .boolean(true)) }
        #expect(a.waitForDevice(onA, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(logs())")
        #expect(b.waitForDevice(onB, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(logs())")

        _ = try a.call(HO.busName, onA, HO.device, "Pair")
        #expect(b.waitForDevice(onB, "Paired", { $0 == .boolean(true) }), "\(logs())")
        #expect(try a.deviceProperties(onA)["Paired"] == .boolean(true))
        for stack in [a, b] { try stack.set("Discoverable", .boolean(false)) }

        // A's current activity reaches B; continuing it on B reaches B's handler; A hears Continued.
        let handler = try HandlerFixture.start(app: UA.editor, bus: b.bus, directory: b.session.root)
        defer { handler.terminate(grace: 0.5) }
        let watcher = try Connection.bus(address: a.bus.address)
        defer { watcher.close() }
        let activity = try a.becomeCurrent(app: UA.editor, type: UA.editType, [
            ("title", .string("Found through Avahi")),
            ("user-info", .dictionary(keyType: "s", valueType: "v", [.init(key: .string("page"), value: .variant(.int32(3)))])),
        ])
        try watcher.addMatch("type='signal',interface='\(UA.activityInterface)',member='Continued',path='\(activity)'")
        // The service sends an activity's signals only to connections that asked for them.
        _ = try watcher.call(try Message.methodCall(destination: UA.busName, path: UA.managerPath, interface: UA.managerInterface,
                                                    member: "Subscribe", arguments: []))
        var continuedBy: String?
        try watcher.addFilter { message in
            if message.member == "Continued" { continuedBy = (try? message.arguments())?.first?.stringValue }
            return false
        }
        #expect(b.waitForDevice(onB, "CurrentActivity", timeout: 30, { Self.title($0) == "Found through Avahi" }), "\(logs())")
        let app = try b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(app.first == .string(UA.editor), "\(logs())")
        let line = try handler.readLine(timeout: 30)
        #expect(line?.contains("Found through Avahi") == true, "\(line ?? "no line from the handler")")
        _ = waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 50)
            return continuedBy != nil
        }
        #expect(continuedBy == UA.editor, "\(logs())")

        // Both daemons restart, on new ports, so neither can reach the other
        // at the address it stored: only discovery brings them back together.
        let oldAddressOfA = try b.deviceProperties(onB)["Address"]?.stringValue ?? ""
        a.killHandoffd()
        b.killHandoffd()
        try a.startHandoffd()
        try b.startHandoffd()
        #expect(a.waitForDevice(onA, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(logs())")
        #expect(b.waitForDevice(onB, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(logs())")
        #expect(try a.deviceProperties(onA)["Paired"] == .boolean(true))
        let newAddressOfA = try b.deviceProperties(onB)["Address"]?.stringValue ?? ""
        // The kernel picks the new ports, and may by chance hand back the old
        // one: the log line, not the address, shows that discovery dialed.
        #expect(newAddressOfA.hasPrefix(link.desktops[0].address + ":"), "\(oldAddressOfA) → \(newAddressOfA)")
        #expect(a.logEventually(contains: "through Avahi"), "\(logs())")
        #expect(waitUntil(timeout: 30) { a.handoffLog.contains("found through discovery") || b.handoffLog.contains("found through discovery") }, "\(logs())")
    }
}
