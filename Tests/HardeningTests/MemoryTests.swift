// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
import UserActivityCore

/// What a caller can make the daemon hold in memory, measured from outside
/// (`/proc/<pid>/status`), and how soon an oversized call is refused.
@Suite("Memory")
struct MemoryTests {
    /// `VmRSS` or `VmHWM` of `pid`, in bytes.
    static func status(_ pid: pid_t, _ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
            return (Int(digits) ?? -1) * 1024
        }
        return -1
    }

    static func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

    /// An activity of (nearly) the largest size allowed: ~246 KiB of data
    /// in four fields, each under its own limit, all under maximumActivityBytes.
    static func largestProperties(_ n: Int) -> [(String, TypedValue)] {
        let limits = ActivityLimits.standard
        let field = limits.maximumUserInfoBytes - 1024
        let text = limits.maximumTextBytes - 4 * 1024
        return [
            ("user-info", .stringVariantDictionary([("blob", .string(String(repeating: "u", count: field)))])),
            ("content-attributes", .stringVariantDictionary([("blob", .string(String(repeating: "c", count: field)))])),
            ("content-description", .string(String(repeating: "d", count: text))),
            ("target-content-identifier", .string("\(n)-" + String(repeating: "t", count: text))),
        ]
    }

    @Test("1,024 activities of the largest size from one app over four connections: the app's memory share holds the daemon's RSS within its bound, and RSS comes back when the app leaves")
    func perAppMemoryShare() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let limits = ActivityLimits.standard
        let probe = try Self.warmedUp(daemon, count: 8, Self.largestProperties)
        func liveActivities() -> Int { Self.liveActivities(probe) }
        let baseline = Self.status(pid, "VmRSS")

        // One app over four connections (each may hold 256 live activities).
        let connections = try (0..<4).map { _ in try daemon.connect() }
        var accepted = 0
        var refusals: [String: Int] = [:]
        for n in 0..<1024 {
            switch connections[n % 4].attempt(UA.managerPath, UA.manager, "CreateActivity",
                            [.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))] + Self.largestProperties(n))]) {
            case .success: accepted += 1
            case .failure(let failure): refusals[failure.name, default: 0] += 1
            }
        }
        #expect(probe.ping() != nil)
        let peak = Self.status(pid, "VmRSS")
        let dataBytes = ActivityProperties.sized(Self.largestProperties(0)).dataBytes
        // The documented bound: 4 × the per-app share of data, plus 32 MiB.
        let bound = 4 * limits.maximumLiveActivityBytesPerApp + 32 * 1024 * 1024
        print("memory share: \(accepted) of 1024 activities of \(dataBytes) bytes accepted (\(refusals)); daemon RSS \(Self.mib(baseline)) → \(Self.mib(peak)), bound +\(Self.mib(bound))")
        #expect(accepted > 0 && accepted <= limits.maximumLiveActivityBytesPerApp / dataBytes)
        #expect(refusals.keys.allSatisfy { $0 == UA.error(.limitExceeded) }, "\(refusals)")
        // Under a sanitizer the daemon's RSS measures the sanitizer (shadow
        // memory, AddressSanitizer's quarantine of freed blocks), not the
        // daemon's data: the counts above still hold, the sizes are not checked.
        let sanitized = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
            || ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil
        #expect(sanitized || peak - baseline <= bound, "the daemon grew by \(Self.mib(peak - baseline)) for one app; the bound is \(Self.mib(bound))")

        for connection in connections { connection.close() }
        #expect(waitUntil(timeout: 10) { liveActivities() == 0 })
        let returned = waitUntil(timeout: 15, interval: 0.2) { Self.status(pid, "VmRSS") <= baseline + 8 * 1024 * 1024 }
        let after = Self.status(pid, "VmRSS")
        print("memory share: after the app left, daemon RSS \(Self.mib(after)) (baseline \(Self.mib(baseline)), peak \(Self.mib(peak)))")
        #expect(sanitized || returned, "RSS stayed at \(Self.mib(after)) after the app left (baseline \(Self.mib(baseline)), peak \(Self.mib(peak)))")
        #expect(try daemon.daemonPID() == pid)
    }

    /// How many live activities the daemon has, or -1 when it does not answer.
    static func liveActivities(_ probe: BusClient) -> Int {
        let reply = try? probe.call(UA.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        guard case .dictionary(_, _, let entries)? = reply?.first else { return -1 }
        return entries.count
    }

    /// Warms the daemon up with `count` activities of a connection that then
    /// leaves: whatever it allocates once (catalog, store, signal paths) is
    /// there before a baseline is taken. Returns a connection to watch it with.
    static func warmedUp(_ daemon: ActivatedDaemon, count: Int, _ properties: (Int) -> [(String, TypedValue)]) throws -> BusClient {
        let warm = try daemon.connect()
        for n in 0..<count { _ = try warm.create(UA.editType, app: UA.editor, properties(n)) }
        warm.close()
        let probe = try daemon.connect()
        #expect(waitUntil(timeout: 30) { liveActivities(probe) == 0 }, "the warm-up connection's activities end with it")
        return probe
    }

    /// An activity of byte arrays: a 65,000-byte `ay` in user-info (just under
    /// its 64 KiB) and, in content-attributes, an `aay` of 8,000 four-byte
    /// arrays (the same 64 KiB on the wire in many small values).
    static func byteArrayProperties(_ n: Int) -> [(String, TypedValue)] {
        let blob = [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: 65_000)
        let small = (0..<8_000).map { i in TypedValue.bytes([UInt8(truncatingIfNeeded: i), 1, 2, UInt8(truncatingIfNeeded: n)]) }
        return [
            ("user-info", .stringVariantDictionary([("blob", .bytes(blob))])),
            ("content-attributes", .stringVariantDictionary([("pieces", .array(elementType: "ay", small))])),
            ("target-content-identifier", .string("bytes-\(n)")),
        ]
    }

    @Test("Activities of ay and aay values from one app: the app's memory share holds the daemon's RSS within its bound, and RSS comes back when the app leaves")
    func perAppMemoryShareWithByteArrays() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let limits = ActivityLimits.standard
        let probe = try Self.warmedUp(daemon, count: 4, Self.byteArrayProperties)
        func liveActivities() -> Int { Self.liveActivities(probe) }
        let baseline = Self.status(pid, "VmRSS")

        let connection = try daemon.connect()
        var accepted = 0
        var refusals: [String: Int] = [:]
        for n in 0..<60 {
            switch connection.attempt(UA.managerPath, UA.manager, "CreateActivity",
                                   [.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))] + Self.byteArrayProperties(n))]) {
            case .success: accepted += 1
            case .failure(let failure): refusals[failure.name, default: 0] += 1
            }
        }
        #expect(probe.ping() != nil)
        let peak = Self.status(pid, "VmRSS")
        let properties = ActivityProperties.sized(Self.byteArrayProperties(0))
        let bound = 4 * limits.maximumLiveActivityBytesPerApp + 32 * 1024 * 1024
        print("memory share (byte arrays): \(accepted) of 60 activities of \(properties.dataBytes) bytes on the wire, \(properties.heldBytes) held, accepted (\(refusals)); daemon RSS \(Self.mib(baseline)) → \(Self.mib(peak)), bound +\(Self.mib(bound))")
        // The share is counted in held bytes: the many small arrays count for more than their wire size.
        #expect(properties.heldBytes > properties.dataBytes)
        #expect(accepted > 0 && accepted <= limits.maximumLiveActivityBytesPerApp / properties.heldBytes)
        #expect(refusals.keys.allSatisfy { $0 == UA.error(.limitExceeded) } && !refusals.isEmpty, "\(refusals)")
        let sanitized = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
            || ProcessInfo.processInfo.environment["TSAN_OPTIONS"] != nil
        #expect(sanitized || peak - baseline <= bound, "the daemon grew by \(Self.mib(peak - baseline)) for one app; the bound is \(Self.mib(bound))")

        connection.close()
        #expect(waitUntil(timeout: 30) { liveActivities() == 0 })
        let returned = waitUntil(timeout: 30, interval: 0.2) { Self.status(pid, "VmRSS") <= baseline + 8 * 1024 * 1024 }
        let after = Self.status(pid, "VmRSS")
        print("memory share (byte arrays): after the app left, daemon RSS \(Self.mib(after)) (baseline \(Self.mib(baseline)), peak \(Self.mib(peak)))")
        #expect(sanitized || returned, "RSS stayed at \(Self.mib(after)) after the app left (baseline \(Self.mib(baseline)), peak \(Self.mib(peak)))")
        #expect(try daemon.daemonPID() == pid)
    }

    /// A `CreateActivity` whose user-info holds one `ay` of `mebibytes`,
    /// sent by a Python (GIO) process: building the message there costs
    /// no more than the bytes themselves.
    static let hugeUserInfoScript = """
    import sys
    from gi.repository import Gio, GLib
    size = int(sys.argv[1]) * 1024 * 1024
    bus = Gio.DBusConnection.new_for_address_sync(sys.argv[2],
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
    blob = GLib.Variant.new_from_bytes(GLib.VariantType.new('ay'), GLib.Bytes.new(b'\\x00' * size), True)
    info = GLib.Variant('a{sv}', {'blob': blob})
    props = GLib.Variant('a{sv}', {'app-id': GLib.Variant('s', 'com.example.Editor'), 'user-info': info})
    try:
        bus.call_sync('org.example.UserActivity', '/org/example/UserActivity', 'org.example.UserActivity',
                      'CreateActivity', GLib.Variant.new_tuple(GLib.Variant('s', 'com.example.Editor.edit-document'), props),
                      None, Gio.DBusCallFlags.NONE, 120000, None)
        print('accepted')
    except GLib.Error as error:
        print(Gio.DBusError.get_remote_error(error) or error.message)
        print(error.message)
    """

    @Test("A 60 MiB user-info is refused with UserInfoTooLarge before it is decoded; another client's Pings are answered meanwhile")
    func hugeUserInfoRefusedEarly() throws {
        let mebibytes = Int(ProcessInfo.processInfo.environment["USERACTIVITY_TEST_HUGE_MIB"] ?? "") ?? 60
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let other = try daemon.connect()
        func percentile(_ samples: [Double], _ p: Double) -> Double {
            let sorted = samples.sorted()
            return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        var quiet: [Double] = []
        for _ in 0..<300 { if let rtt = other.ping() { quiet.append(rtt) } }
        let peakBefore = Self.status(pid, "VmHWM")

        let outcome = Failures()
        let done = DispatchSemaphore(value: 0)
        let address = daemon.bus.address
        let started = Date()
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                let result = try runCommand("/usr/bin/python3", ["-c", Self.hugeUserInfoScript, "\(mebibytes)", address],
                                            environment: ["PATH": standardSearchPath], timeout: 120)
                outcome.add(result.stdout + result.stderr)
            } catch {
                outcome.add("could not run python3: \(error)")
            }
        }
        var during: [Double] = []
        var unanswered = 0
        while done.wait(timeout: .now() + 0.002) == .timedOut {
            if let rtt = other.ping(timeoutMilliseconds: 30_000) { during.append(rtt) } else { unanswered += 1 }
        }
        let elapsed = seconds(since: started)
        let peakAfter = Self.status(pid, "VmHWM")
        let answer = outcome.items.first ?? ""
        print(String(format: "huge user-info (%d MiB): answered in %.2f s; other client's Ping p50 %.3f ms p99 %.3f ms max %.3f ms over %d pings (quiet baseline p50 %.3f ms p99 %.3f ms); daemon VmHWM %@ → %@",
                     mebibytes, elapsed, percentile(during, 0.5) * 1000, percentile(during, 0.99) * 1000, (during.max() ?? .nan) * 1000, during.count,
                     percentile(quiet, 0.5) * 1000, percentile(quiet, 0.99) * 1000, Self.mib(peakBefore), Self.mib(peakAfter)))
        #expect(answer.hasPrefix(UA.error(.userInfoTooLarge)), "the caller got: \(answer)")
        #expect(unanswered == 0 && !during.isEmpty, "\(unanswered) Pings of another client went unanswered, \(during.count) answered")
        // Decoding it into Swift values took gigabytes; refused before decoding, the daemon's peak grows by little more than the message.
        #expect(peakAfter - peakBefore <= 3 * mebibytes * 1024 * 1024 + 64 * 1024 * 1024,
                "the daemon's peak RSS grew by \(Self.mib(peakAfter - peakBefore)) for a \(mebibytes) MiB message")
        #expect(try daemon.daemonPID() == pid)
    }
}

extension MemoryTests {
    @Test("Calls bigger than any valid one are refused before decoding: a 2 MiB Search query, a 300 KiB title")
    func oversizedCallsRefused() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        let search = client.attempt(UA.managerPath, UA.manager, "Search", [.string(String(repeating: "q", count: 2 * 1024 * 1024)),
                                                                        .stringVariantDictionary([])])
        #expect(search.errorName == UA.error(.limitExceeded), "\(search)")
        let title = client.attempt(UA.managerPath, UA.manager, "CreateActivity", [
            .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor)),
                                                            ("title", .string(String(repeating: "t", count: 300 * 1024)))]),
        ])
        #expect(title.errorName == UA.error(.limitExceeded), "\(title)")
        // Valid calls at the limits still pass (the measure is a lower bound of the marshalled size).
        _ = try client.create(UA.editType, app: UA.editor, Self.largestProperties(0))
        #expect(try client.search("anything").isEmpty)
        #expect(try daemon.daemonPID() == pid)
    }
}

extension ActivityProperties {
    /// The properties `entries` describe, as the registry would hold them.
    static func sized(_ entries: [(String, TypedValue)]) -> ActivityProperties {
        (try? ActivityPatch.parse(entries, allowsAppIDClaim: true).applied(to: ActivityProperties(), limits: .standard)) ?? ActivityProperties()
    }
}
