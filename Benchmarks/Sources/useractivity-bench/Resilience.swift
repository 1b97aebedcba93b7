// SPDX-License-Identifier: Apache-2.0
import CDBus
import DBusKit
import Foundation
import TypedValues

/// `--resilience`: what one hostile client costs everyone else, and the
/// daemon's CPU per Donate, each against a baseline from the same run on the
/// same private bus:
///  1. the daemon's RSS quiet, after one app (the bench's app id, claimed with
///     `app-id` by unconfined connections) filled its 16 MiB share with
///     activities of the largest allowed size until `LimitExceeded`, and after
///     those connections closed;
///  2. another client's `Properties.Get(Version)` p50/p99 (answered by the
///     daemon's own code, unlike `Peer.Ping`, which libdbus answers) quiet and
///     while a third client sends `CreateActivity` with a 60 MiB `ay` in
///     user-info (refused with `UserInfoTooLarge`), and that refusal's time;
///  3. the daemon's CPU per durable Donate of a ~600-byte record, from
///     /proc/PID/stat utime+stime over N sequential calls (schedstat too).
struct ResilienceBench {
    let session: BenchSession
    let quick: Bool
    let progress: (String) -> Void

    static let hostileConnections = 4
    static let hugeBytes = 60 * 1024 * 1024

    // MARK: 1. flood

    /// The largest activity the limits take: 64 KiB fields up to the 256 KiB total.
    /// `bytes`: user-info and content-attributes carry an `ay` each (what an
    /// app would send for binary state); otherwise a string of the same length.
    static func largestProperties(_ n: Int, bytes: Bool) -> TypedValue {
        let text = String(repeating: "x", count: 60_000)
        let blob: TypedValue = bytes ? .bytes([UInt8](repeating: 0x61, count: 65_000))
            : .string(String(repeating: "b", count: 65_000))
        return .stringVariantDictionary([
            ("app-id", .string(Fixture.appID)),
            ("title", .string(String(repeating: "t", count: 1000))),
            ("persistent-identifier", .string("hostile-\(n)-" + String(repeating: "p", count: 900))),
            ("content-description", .string(text)),
            ("webpage-url", .string("https://example.com/" + String(repeating: "u", count: 59_000))),
            ("user-info", .stringVariantDictionary([("blob", blob)])),
            ("content-attributes", .stringVariantDictionary([("blob", blob)])),
        ])
    }

    struct Flood { var quietKiB: Int; var fullKiB: Int; var afterKiB: Int; var accepted: Int; var refusal: String }

    func flood(bytes: Bool) throws -> Flood {
        let pid = session.daemonPID
        Thread.sleep(forTimeInterval: 0.5)
        let quiet = BenchSession.memory(of: pid)?.rssKiB ?? 0
        var connections: [Connection] = []
        for _ in 0..<Self.hostileConnections { connections.append(try Connection.bus(address: session.bus.address)) }
        var accepted = 0
        var refusal = ""
        let limit = 1024
        outer: for n in 0..<limit {
            let message = try session.message(Service.managerPath, Service.managerInterface, "CreateActivity",
                                              [.string(Fixture.activityType), Self.largestProperties(n, bytes: bytes)])
            do {
                _ = try connections[n % connections.count].call(message)
                accepted += 1
            } catch {
                refusal = "\(error)"
                guard refusal.contains("LimitExceeded") else { throw BenchError("flood: activity \(n) refused with \(refusal), not LimitExceeded") }
                break outer
            }
        }
        if refusal.isEmpty { refusal = "none after \(limit)" }
        try session.fence()
        let full = BenchSession.memory(of: pid)?.rssKiB ?? 0
        for connection in connections { connection.close() }
        connections.removeAll()
        // The daemon frees the activities when it sees the names go; a fence
        // after a short wait makes sure it has handled NameOwnerChanged.
        Thread.sleep(forTimeInterval: 1.0)
        try session.fence()
        Thread.sleep(forTimeInterval: 0.5)
        let after = BenchSession.memory(of: pid)?.rssKiB ?? 0
        return Flood(quietKiB: quiet, fullKiB: full, afterKiB: after, accepted: accepted, refusal: refusal)
    }

    // MARK: 2. a 60 MiB message

    /// CreateActivity(s, a{sv}) with user-info = {"blob": <ay of `bytes`>}, built
    /// with libdbus directly (a TypedValue per byte would take gigabytes).
    static func hugeCall(address: String, bytes: Int) throws -> (milliseconds: Double, error: String) {
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else { throw BenchError("open \(address) failed") }
        defer { dbus_connection_close(connection); dbus_connection_unref(connection) }
        guard dbus_bus_register(connection, &error) != 0 else { dbus_error_free(&error); throw BenchError("Hello failed") }
        guard let message = dbus_message_new_method_call(Service.busName, Service.managerPath, Service.managerInterface, "CreateActivity") else {
            throw BenchError("out of memory")
        }
        defer { dbus_message_unref(message) }
        var top = DBusMessageIter()
        dbus_message_iter_init_append(message, &top)
        func appendString(_ iter: inout DBusMessageIter, _ text: String) {
            text.withCString { pointer in
                var p: UnsafePointer<CChar>? = pointer
                _ = dbus_message_iter_append_basic(&iter, CDBUS_TYPE_STRING, &p)
            }
        }
        appendString(&top, Fixture.activityType)
        var dict = DBusMessageIter(), entry = DBusMessageIter(), variant = DBusMessageIter()
        var inner = DBusMessageIter(), innerEntry = DBusMessageIter(), innerVariant = DBusMessageIter(), array = DBusMessageIter()
        _ = dbus_message_iter_open_container(&top, CDBUS_TYPE_ARRAY, "{sv}", &dict)
        _ = dbus_message_iter_open_container(&dict, CDBUS_TYPE_DICT_ENTRY, nil, &entry)
        appendString(&entry, "user-info")
        _ = dbus_message_iter_open_container(&entry, CDBUS_TYPE_VARIANT, "a{sv}", &variant)
        _ = dbus_message_iter_open_container(&variant, CDBUS_TYPE_ARRAY, "{sv}", &inner)
        _ = dbus_message_iter_open_container(&inner, CDBUS_TYPE_DICT_ENTRY, nil, &innerEntry)
        appendString(&innerEntry, "blob")
        _ = dbus_message_iter_open_container(&innerEntry, CDBUS_TYPE_VARIANT, "ay", &innerVariant)
        _ = dbus_message_iter_open_container(&innerVariant, CDBUS_TYPE_ARRAY, "y", &array)
        let payload = [UInt8](repeating: 0x61, count: bytes)
        let appended = payload.withUnsafeBufferPointer { buffer -> dbus_bool_t in
            var base: UnsafePointer<UInt8>? = buffer.baseAddress
            return dbus_message_iter_append_fixed_array(&array, CDBUS_TYPE_BYTE, &base, Int32(bytes))
        }
        guard appended != 0,
              dbus_message_iter_close_container(&innerVariant, &array) != 0,
              dbus_message_iter_close_container(&innerEntry, &innerVariant) != 0,
              dbus_message_iter_close_container(&inner, &innerEntry) != 0,
              dbus_message_iter_close_container(&variant, &inner) != 0,
              dbus_message_iter_close_container(&entry, &variant) != 0,
              dbus_message_iter_close_container(&dict, &entry) != 0,
              dbus_message_iter_close_container(&top, &dict) != 0 else { throw BenchError("building the 60 MiB message failed") }
        let start = monotonicNanoseconds()
        let reply = dbus_connection_send_with_reply_and_block(connection, message, 120_000, &error)
        let milliseconds = Double(monotonicNanoseconds() - start) / 1e6
        if let reply { dbus_message_unref(reply); return (milliseconds, "none (accepted)") }
        let name = error.name.map { String(cString: $0) } ?? "?"
        dbus_error_free(&error)
        return (milliseconds, name)
    }

    struct Huge { var quiet: [Double]; var during: [Double]; var refusals: [Double]; var error: String }

    func huge() throws -> Huge {
        let client = try Connection.bus(address: session.bus.address)
        defer { client.close() }
        func getVersion() throws -> Double {
            let message = try session.message(Service.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                              [.string(Service.managerInterface), .string("Version")])
            let start = monotonicNanoseconds()
            _ = try client.call(message)
            return Double(monotonicNanoseconds() - start) / 1000
        }
        let samples = quick ? 1000 : 4000
        for _ in 0..<200 { _ = try getVersion() }
        var quiet: [Double] = []
        for _ in 0..<samples { quiet.append(try getVersion()) }

        final class Shared: @unchecked Sendable { let lock = NSLock(); var done = false; var refusals: [Double] = []; var error = ""; var failure: String? }
        let shared = Shared()
        let address = session.bus.address
        let messages = quick ? 2 : 5
        let thread = Thread {
            for _ in 0..<messages {
                do {
                    let (ms, name) = try ResilienceBench.hugeCall(address: address, bytes: ResilienceBench.hugeBytes)
                    shared.lock.lock(); shared.refusals.append(ms); shared.error = name; shared.lock.unlock()
                } catch { shared.lock.lock(); shared.failure = "\(error)"; shared.lock.unlock(); break }
            }
            shared.lock.lock(); shared.done = true; shared.lock.unlock()
        }
        thread.stackSize = 8 << 20
        thread.start()
        var during: [Double] = []
        while true {
            shared.lock.lock(); let done = shared.done; shared.lock.unlock()
            if done { break }
            during.append(try getVersion())
        }
        if let failure = shared.failure { throw BenchError("the 60 MiB client: \(failure)") }
        return Huge(quiet: quiet, during: during, refusals: shared.refusals, error: shared.error)
    }

    // MARK: 3. Donate's CPU

    /// A realistic record, about 600 bytes of a{sv}.
    static func donation(_ n: Int) -> [TypedValue] {
        [.string(Fixture.activityType), .stringVariantDictionary([
            ("title", .string("Quarterly budget review notes for the finance team")),
            ("content-description", .string("Draft with regional figures")),
            ("keywords", .stringArray(["budget", "finance", "quarterly"])),
            ("webpage-url", .string("https://docs.example.com/d/quarterly-budget-review-\(n)")),
            ("persistent-identifier", .string("donate-cpu-\(n)-7f3c2a9e")),
            ("eligible-for-search", .boolean(true)),
            ("user-info", .stringVariantDictionary([
                ("document-uri", .string("file:///home/user/Documents/quarterly-budget-review-\(n).odt")),
                ("page", .uint32(3)),
                ("selection", .structure([.int32(1_204), .int32(1_348)])),
                ("zoom", .double(1.25)),
            ])),
        ])]
    }

    struct Donate { var calls: Int; var statUs: Double?; var schedUs: Double?; var pingStatUs: Double?; var donateP50: Double; var pingP50: Double; var bodyBytes: Int; var dictBytes: Int }

    func donate() throws -> Donate {
        let pid = session.daemonPID
        let calls = quick ? 1000 : 4000
        func message(_ n: Int) throws -> Message {
            try session.message(Service.managerPath, Service.managerInterface, "Donate", Self.donation(n))
        }
        for n in 0..<200 { _ = try session.connection.call(message(1_000_000 + n)) }
        let body = try message(0).marshalledBodyLength()
        let dict = Self.donation(0)[1].marshalledSize
        // Latency: Donate and Ping interleaved.
        var donates: [Double] = [], pings: [Double] = []
        for n in 0..<(calls / 4) {
            donates.append(Double(try session.timedCall(message(2_000_000 + n)).nanoseconds) / 1000)
            pings.append(Double(try session.timedCall(session.message(Service.managerPath, "org.freedesktop.DBus.Peer", "Ping")).nanoseconds) / 1000)
        }
        // CPU: sequential Donates only.
        let messages = try (0..<calls).map { try message($0) }
        let statBefore = BenchSession.cpuSeconds(of: pid), schedBefore = BenchSession.cpuNanoseconds(of: pid)
        for m in messages { _ = try session.connection.call(m) }
        let statAfter = BenchSession.cpuSeconds(of: pid), schedAfter = BenchSession.cpuNanoseconds(of: pid)
        let statUs = statBefore.flatMap { b in statAfter.map { ($0 - b) * 1e6 / Double(calls) } }
        let schedUs = schedBefore.flatMap { b in schedAfter.map { Double($0 - b) / 1000 / Double(calls) } }
        // The baseline: as many sequential Pings, which the daemon's libdbus answers.
        let ping = try session.message(Service.managerPath, "org.freedesktop.DBus.Peer", "Ping")
        let pingBefore = BenchSession.cpuSeconds(of: pid)
        for _ in 0..<calls { _ = try session.connection.call(ping) }
        let pingAfter = BenchSession.cpuSeconds(of: pid)
        let pingStatUs = pingBefore.flatMap { b in pingAfter.map { ($0 - b) * 1e6 / Double(calls) } }
        return Donate(calls: calls, statUs: statUs, schedUs: schedUs, pingStatUs: pingStatUs, donateP50: percentile(donates, 0.5),
                      pingP50: percentile(pings, 0.5), bodyBytes: body, dictBytes: dict)
    }

    // MARK: Report

    func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    func run() throws -> String {
        var out: [String] = []
        func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
        out.append("1. One app's flood and the daemon's memory (unconfined clients claiming app-id \(Fixture.appID), \(Self.hostileConnections) connections, activities of ~252 KiB data, created until refused)")
        for bytes in [false, true] {
            progress("resilience 1/3: one app floods the daemon with the largest activities (\(bytes ? "ay" : "string") blobs)…")
            let f = try flood(bytes: bytes)
            let refusal = f.refusal.contains("LimitExceeded") ? "LimitExceeded" : f.refusal
            out.append("   \(bytes ? "user-info and content-attributes {blob: ay 65 000}" : "user-info and content-attributes {blob: s 65 000}"): accepted \(f.accepted), then \(refusal)")
            out.append(String(format: "     useractivityd VmRSS quiet %@ | share full %@ (%.2f×) | after the connections closed %@ (%.2f×)",
                              mib(f.quietKiB), mib(f.fullKiB), Double(f.fullKiB) / Double(max(f.quietKiB, 1)),
                              mib(f.afterKiB), Double(f.afterKiB) / Double(max(f.quietKiB, 1))))
        }
        progress("resilience 2/3: Properties.Get(Version) while another client sends 60 MiB…")
        let h = try huge()
        let q50 = percentile(h.quiet, 0.5), q99 = percentile(h.quiet, 0.99)
        let d50 = percentile(h.during, 0.5), d99 = percentile(h.during, 0.99)
        out.append("2. Another client during a 60 MiB CreateActivity (Properties.Get Version, which the daemon's own code answers)")
        out.append(String(format: "   quiet: p50 %.1f µs, p99 %.1f µs (n=%d) | during: p50 %.1f µs (%.2f×), p99 %.1f µs (%.2f×), max %.1f µs (n=%d)",
                          q50, q99, h.quiet.count, d50, d50 / q50, d99, d99 / q99, h.during.max() ?? .nan, h.during.count))
        out.append(String(format: "   the 60 MiB call: refused with %@ after p50 %.0f ms (%d sent: %@ ms)", h.error,
                          percentile(h.refusals, 0.5), h.refusals.count, h.refusals.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        progress("resilience 3/3: the daemon's CPU per durable Donate…")
        let d = try donate()
        let cpu = d.statUs ?? .nan
        out.append("3. Daemon CPU per durable Donate (\(d.dictBytes)-byte a{sv}, \(d.bodyBytes)-byte body; \(d.calls) sequential calls)")
        out.append(String(format: "   /proc/PID/stat utime+stime: %.1f µs per Donate (target ≤ 150 µs: %@); schedstat: %.1f µs; per Ping (same run, %d sequential) %.1f µs",
                          cpu, cpu <= 150 ? "PASS" : "MISS", d.schedUs ?? .nan, d.calls, d.pingStatUs ?? .nan))
        out.append(String(format: "   Donate round trip p50 %.1f µs, Ping p50 %.1f µs (%.2f×)", d.donateP50, d.pingP50, d.donateP50 / d.pingP50))
        return out.joined(separator: "\n")
    }
}
