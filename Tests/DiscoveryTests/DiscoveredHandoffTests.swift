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

    @Test("Both discoverable: each device appears on the other through Avahi (and goes while neither is discoverable), they pair, A's current activity shows on B and continues into B's handler, A hears Continued; after both daemons restart on new ports they reconnect through discovery; a stranger's browse and TLS connection never show A's DeviceId, name or the same token or certificate twice",
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
        let idA = a.deviceID
        let before = try strangersView(of: a, "Desktop A", idA, link)

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
        // Across the restart a stranger sees nothing it saw before: another token, another certificate.
        let after = try strangersView(of: a, "Desktop A", idA, link)
        #expect(after.token != before.token && after.certificate != before.certificate, "\(before) → \(after)")
    }

    /// What a stranger in B's namespace learns of `stack` (not Discoverable):
    /// its DNS-SD record and the certificate its port shows. Neither holds
    /// the DeviceId or the name; returns the token and the certificate's key.
    func strangersView(of stack: HandoffStack, _ name: String, _ id: String, _ link: TwoDesktopLink) throws -> (token: String, certificate: String) {
        let probe = try BuiltProducts.executable(named: "handoff-discovery-probe")
        let browser = try link.spawn(in: 1, probe, ["browse"])
        defer { browser.terminate() }
        let port = Int(stack.port)
        var lines: [String] = []
        var txt: [String: String]?
        let deadline = Date().addingTimeInterval(60)
        while txt == nil, Date() < deadline, let line = try browser.readLine(timeout: max(0.05, deadline.timeIntervalSinceNow)) {
            lines.append(line)
            guard let event = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any], event["event"] as? String == "found",
                  event["address"] as? String == link.desktops[0].address, event["port"] as? Int == port,
                  let record = event["txt"] as? [String: String], record["name"] == nil
            else { continue }
            txt = record
        }
        let record = try #require(txt, "no announcement of port \(port) without a name: \(lines)")
        #expect(record["id"] == nil && record["r"]?.count == 32, "\(record)")
        // Avahi's cache may still hold the announcement from the pairing window a moment ago; the current one holds neither.
        #expect(!record.values.contains { $0.contains(id) || $0.contains(name) }, "\(record)")
        #expect(!lines.filter { $0.contains("\"port\":\(port)") && !$0.contains("\"name\"") }.joined().contains(id), "\(lines)")

        let files = try StrangerTLSProbe.prepare(in: stack.session.root, environment: [:])
        let process = try link.spawn(in: 1, "/usr/bin/python3", [files.script, link.desktops[0].address, "\(port)", files.cert, files.key])
        defer { process.terminate(grace: 0.5) }
        let seen = try StrangerTLSProbe.read(process)
        #expect(seen.spki.count == 64 && seen.spki != id && !seen.der.contains(id), "\(seen)")
        #expect(!seen.subject.contains(name.filter { $0 != " " }) && seen.received == 0, "\(seen)")
        return (record["r"] ?? "", seen.spki)
    }
}
