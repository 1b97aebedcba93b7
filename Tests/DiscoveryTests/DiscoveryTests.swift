// SPDX-License-Identifier: Apache-2.0
import Foundation
import HandoffDiscovery
import TestSupport
import Testing
import TypedValues

/// One JSON line of `handoff-discovery-probe`.
private func event(_ line: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
}

/// Reads probe lines until one satisfies `match` (nil at end of output or after `timeout`).
private func readEvent(_ probe: ChildProcess, timeout: Double, seen: inout [String],
                       _ match: ([String: Any]) -> Bool) -> [String: Any]? {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        guard let line = try? probe.readLine(timeout: max(0.05, deadline.timeIntervalSinceNow)) else { return nil }
        seen.append(line)
        if let object = event(line), match(object) { return object }
    }
    return nil
}

/// The probe and two linked desktops whose Avahi daemons have started; the
/// caller tears the link down.
private func desktopsWithAvahi() throws -> (probe: String, link: TwoDesktopLink) {
    let probe = try BuiltProducts.executable(named: "handoff-discovery-probe")
    let link = try TwoDesktopLink()
    do {
        #expect(try link.waitForAvahi(0), "Avahi did not start in A\n\(link.logs)")
        #expect(try link.waitForAvahi(1), "Avahi did not start in B\n\(link.logs)")
    } catch {
        link.tearDown()
        throw error
    }
    return (probe, link)
}

@Suite("Discovery across two network namespaces", .serialized)
struct NamespaceDiscoveryTests {
    @Test("B browses and finds A's instance with A's address, port and TXT, follows its TXT as A turns discoverable on and off, and loses it when A stops",
          .enabled(if: TwoDesktopLink.skipReason == nil, "\(TwoDesktopLink.skipReason ?? "")"),
          .timeLimit(.minutes(2)))
    func publishAndBrowse() throws {
        let (probe, link) = try desktopsWithAvahi()
        defer { link.tearDown() }

        let publisher = try link.spawn(in: 0, probe, ["publish", "--port", "48311", "--txt", "id=0123456789abcdef", "--txt", "v=1"])
        defer { publisher.terminate() }
        var publisherLines: [String] = []
        let published = readEvent(publisher, timeout: 30, seen: &publisherLines) { $0["event"] as? String == "published" }
        let instance = try #require(published?["instance"] as? String,
                                    "A never published: \(publisherLines) \(publisher.stderrText)\n\(link.logs)")
        #expect(instance.hasPrefix("UserActivity "))

        let browser = try link.spawn(in: 1, probe, ["browse"])
        defer { browser.terminate() }
        var browserLines: [String] = []
        let found = readEvent(browser, timeout: 30, seen: &browserLines) {
            $0["event"] as? String == "found" && $0["instance"] as? String == instance
        }
        let service = try #require(found, "B never found \(instance): \(browserLines) \(browser.stderrText)\n\(link.logs)")
        #expect(service["address"] as? String == link.desktops[0].address)
        #expect(service["port"] as? Int == 48311)
        #expect(service["interface"] as? String == link.desktops[1].interface)
        let txt = service["txt"] as? [String: String]
        #expect(txt?["id"] == "0123456789abcdef")
        #expect(txt?["v"] == "1")
        // Not discoverable: the TXT carries no name.
        #expect(txt?[AvahiDiscovery.nameKey] == nil)
        #expect(txt?[AvahiDiscovery.pairingKey] == nil)

        // Discoverable on (SIGUSR1): B sees the TXT change live, with the name; off (SIGUSR2): gone again.
        publisher.signal(SIGUSR1)
        let named = readEvent(browser, timeout: 30, seen: &browserLines) {
            $0["event"] as? String == "found" && ($0["txt"] as? [String: String])?[AvahiDiscovery.nameKey] == "probe"
        }
        #expect((named?["txt"] as? [String: String])?[AvahiDiscovery.pairingKey] == "1", "\(browserLines)")
        #expect((named?["txt"] as? [String: String])?["id"] == "0123456789abcdef", "\(browserLines)")
        publisher.signal(SIGUSR2)
        let unnamed = readEvent(browser, timeout: 30, seen: &browserLines) {
            $0["event"] as? String == "found" && ($0["txt"] as? [String: String])?[AvahiDiscovery.nameKey] == nil
        }
        #expect(unnamed != nil, "the name stayed in the TXT record: \(browserLines)")

        publisher.terminate()
        let lost = readEvent(browser, timeout: 30, seen: &browserLines) {
            $0["event"] as? String == "lost" && $0["instance"] as? String == instance
        }
        #expect(lost != nil, "B did not see \(instance) go: \(browserLines)")
    }

    @Test("A discoverable publisher's TXT carries its name; a new start has a new random instance name",
          .enabled(if: TwoDesktopLink.skipReason == nil, "\(TwoDesktopLink.skipReason ?? "")"),
          .timeLimit(.minutes(2)))
    func discoverableNameAndRandomInstance() throws {
        let (probe, link) = try desktopsWithAvahi()
        defer { link.tearDown() }
        var lines: [String] = []

        var instances: [String] = []
        for round in 0..<2 {
            let publisher = try link.spawn(in: 0, probe, ["publish", "--port", "48312", "--txt", "id=feed", "--discoverable", "Kitchen laptop"])
            defer { publisher.terminate() }
            let published = readEvent(publisher, timeout: 30, seen: &lines) { $0["event"] as? String == "published" }
            let instance = try #require(published?["instance"] as? String, "round \(round): \(lines)\n\(link.logs)")
            instances.append(instance)
            let result = try link.run(in: 1, "avahi-browse", ["--parsable", "--resolve", "--terminate", "--no-db-lookup", AvahiDiscovery.serviceType], timeout: 30)
            let resolved = result.stdout.split(separator: "\n").filter { $0.hasPrefix("=") }
            #expect(resolved.contains { $0.contains("\"name=Kitchen laptop\"") && $0.contains("\"pairing=1\"") && $0.contains("\"id=feed\"") },
                    "round \(round): \(result)")
            publisher.terminate()
        }
        #expect(instances[0] != instances[1])
    }
}

extension NamespaceDiscoveryTests {
    @Test("When Avahi stops, the publisher says so; when it is back, it publishes again and B finds it again",
          .enabled(if: TwoDesktopLink.skipReason == nil, "\(TwoDesktopLink.skipReason ?? "")"),
          .timeLimit(.minutes(2)))
    func avahiRestarts() throws {
        let (probe, link) = try desktopsWithAvahi()
        defer { link.tearDown() }
        var lines: [String] = []
        let publisher = try link.spawn(in: 0, probe, ["publish", "--port", "48313", "--txt", "id=beef"])
        defer { publisher.terminate() }
        let first = readEvent(publisher, timeout: 30, seen: &lines) { $0["event"] as? String == "published" }
        let instance = try #require(first?["instance"] as? String, "\(lines)\n\(link.logs)")

        // Avahi in A goes away (its pid file is in A's private /run/avahi-daemon).
        let killed = try link.run(in: 0, "avahi-daemon", ["--kill"])
        #expect(killed.succeeded, "\(killed)")
        let gone = readEvent(publisher, timeout: 30, seen: &lines) {
            $0["event"] as? String == "state" && $0["state"] as? String == "unavailable"
        }
        #expect((gone?["reason"] as? String)?.contains("Avahi") == true, "\(lines)")

        // A new Avahi in A: the same instance is published again, without a restart of the publisher.
        let avahi = try link.spawn(in: 0, "avahi-daemon", ["--no-chroot", "--no-drop-root", "--no-rlimits",
                                                          "-f", link.desktops[0].directory + "/avahi.conf"])
        defer { avahi.terminate() }
        let again = readEvent(publisher, timeout: 30, seen: &lines) { $0["event"] as? String == "published" }
        #expect(again?["instance"] as? String == instance, "\(lines)\n\(avahi.stderrText)")

        let browser = try link.spawn(in: 1, probe, ["browse"])
        defer { browser.terminate() }
        var browserLines: [String] = []
        let found = readEvent(browser, timeout: 30, seen: &browserLines) {
            $0["event"] as? String == "found" && $0["instance"] as? String == instance
        }
        #expect(found?["address"] as? String == link.desktops[0].address, "\(browserLines)")
    }
}

@Suite("Discovery without Avahi")
struct AvahiMissingTests {
    @Test("With a system bus but no Avahi on it, the state says so and nothing crashes")
    func noAvahiOnTheBus() throws {
        let probe = try BuiltProducts.executable(named: "handoff-discovery-probe")
        // A private bus stands in for a system bus without Avahi.
        let bus = try PrivateBus()
        defer { bus.stop() }
        let result = try runCommand(probe, ["state", "--seconds", "20"],
                                    environment: bus.environment(adding: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]), timeout: 30)
        #expect(result.exitCode == 3, "\(result)")
        #expect(result.stdout.contains("\"state\":\"unavailable\""), "\(result)")
        #expect(result.stdout.contains("Avahi is not running"), "\(result)")
    }

    @Test("Without a system bus, the state names the address it tried")
    func noSystemBus() throws {
        let probe = try BuiltProducts.executable(named: "handoff-discovery-probe")
        let directory = try TemporaryDirectory()
        let address = "unix:path=\(directory.path)/no-such-socket"
        let result = try runCommand(probe, ["state", "--seconds", "20"],
                                    environment: ["PATH": standardSearchPath, "DBUS_SYSTEM_BUS_ADDRESS": address], timeout: 30)
        #expect(result.exitCode == 3, "\(result)")
        #expect(result.stdout.contains("no system bus at \(address)"), "\(result)")
    }
}

@Suite("TXT records")
struct TXTRecordTests {
    @Test("Encoding sorts keys and cuts entries at 255 bytes; decoding takes the first of a repeated key")
    func roundTrip() {
        let long = String(repeating: "é", count: 200)
        let encoded = AvahiDiscovery.encodeTXT(["v": "1", "id": "abc", "name": long])
        guard case .array(_, let strings) = encoded else { Issue.record("not an array"); return }
        #expect(strings.count == 3)
        let sizes = strings.map { $0.bytesValue?.count ?? -1 }
        #expect(sizes.allSatisfy { $0 <= 255 })
        let decoded = AvahiDiscovery.decodeTXT(encoded)
        #expect(decoded["id"] == "abc")
        #expect(decoded["v"] == "1")
        #expect(decoded["name"].map { long.hasPrefix($0) && !$0.isEmpty } == true)

        let repeated = TypedValue.array(elementType: "ay", ["a=1", "A=2", "flag"].map {
            .array(elementType: "y", Array($0.utf8).map { TypedValue.byte($0) })
        })
        #expect(AvahiDiscovery.decodeTXT(repeated) == ["a": "1", "flag": ""])
    }
}
