// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TypedValues

/// One named kind of round trip.
///
/// The runner samples every selected scenario once per round, in a rotating
/// order, so slow phases of the machine (another process, a frequency change)
/// hit every kind alike and the ratios to the baseline stay meaningful.
/// A scenario keeps whatever state it needs between samples (for example
/// which activity to make current next).
///
/// To measure a new capability (Search, Donate, GetSuggestions, a
/// continuation…): write a class conforming to `Benchmark` and add one line to
/// ``ScenarioCatalog/all``; the table, the JSON and `--scenario` pick it up.
protocol Benchmark: AnyObject {
    /// Prepares state before the warm-up (untimed): activities to act on,
    /// saved data to search, a handler to register…
    func setUp(_ session: BenchSession) throws
    /// Takes one sample and returns the timed nanoseconds. Everything but the
    /// round trip itself (building the message, reading the reply, clean-up
    /// calls such as Invalidate) happens outside the timed part.
    func sample(_ session: BenchSession) throws -> UInt64
    /// Releases what ``setUp(_:)`` made (untimed).
    func tearDown(_ session: BenchSession) throws
    /// Facts about the measured call worth printing (sizes, what was verified).
    var facts: [(String, String)] { get }
}

extension Benchmark {
    func setUp(_ session: BenchSession) throws {}
    func tearDown(_ session: BenchSession) throws {}
    var facts: [(String, String)] { [] }
}

/// A scenario's entry in the catalog: its name, what it times and its target.
struct Scenario: Sendable {
    /// The name shown in the table and matched (case-insensitively) by `--scenario`.
    var name: String
    /// The timed call, in words.
    var timed: String
    /// The largest acceptable ratio to the baseline (applied to p50 and to p99);
    /// nil: reported for reference only.
    var maxRatioToBaseline: Double?
    /// Creates a fresh instance for one run.
    var make: @Sendable () -> any Benchmark
}

enum ScenarioCatalog {
    /// What every other scenario is compared with. libdbus in the daemon
    /// answers Peer.Ping itself, so this is the cost of a round trip through
    /// the bus to this very process, with no service code in it.
    static let baseline = Scenario(
        name: "Ping",
        timed: "org.freedesktop.DBus.Peer.Ping to \(Service.busName) at \(Service.managerPath)",
        maxRatioToBaseline: nil,
        make: { PingBenchmark(destination: Service.busName, path: Service.managerPath) })

    /// Every scenario, baseline first. Add new capabilities here.
    static let all: [Scenario] = [
        baseline,
        Scenario(
            name: "CreateActivity",
            timed: "org.example.UserActivity.CreateActivity(s, a{sv}) → o; Invalidate afterwards, untimed",
            maxRatioToBaseline: 2.0,
            make: { CreateActivityBenchmark() }),
        Scenario(
            name: "BecomeCurrent",
            timed: "org.example.UserActivity.Activity.BecomeCurrent() alternating between two activities",
            maxRatioToBaseline: 1.3,
            make: { BecomeCurrentBenchmark() }),
        Scenario(
            name: "ContinueActivity",
            timed: "org.example.UserActivity.ContinueActivity(s, a{sv}, a{sv}) → s, delivered to a running handler that answers true",
            maxRatioToBaseline: 2.5,
            make: { ContinueActivityBenchmark() }),
        Scenario(
            name: "BusPing",
            timed: "org.freedesktop.DBus.Peer.Ping to the bus daemon itself: the floor of any round trip here",
            maxRatioToBaseline: nil,
            make: { PingBenchmark(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus") }),
    ]

    /// The scenarios `names` select (the baseline always), in catalog order.
    static func select(_ names: [String]) throws -> [Scenario] {
        guard !names.isEmpty else { return all }
        let wanted = Set(names.map { $0.lowercased() })
        let known = Set(all.map { $0.name.lowercased() })
        let unknown = wanted.subtracting(known)
        guard unknown.isEmpty else {
            throw BenchOptions.UsageError(description:
                "unknown scenario \(unknown.sorted().joined(separator: ", ")); known: \(all.map(\.name).joined(separator: ", "))")
        }
        return all.filter { $0.name == baseline.name || wanted.contains($0.name.lowercased()) }
    }
}

// MARK: - Scenarios

/// `Peer.Ping`: an empty call answered by libdbus, no service code.
final class PingBenchmark: Benchmark {
    let destination: String
    let path: String

    init(destination: String, path: String) {
        self.destination = destination
        self.path = path
    }

    func sample(_ session: BenchSession) throws -> UInt64 {
        let message = try session.message(path, "org.freedesktop.DBus.Peer", "Ping", destination: destination)
        return try session.timedCall(message).nanoseconds
    }
}

/// The properties of a realistic document activity, about 600 bytes
/// marshalled: what an editor publishes for an open document.
enum DocumentActivity {
    static func properties(persistentIdentifier: String) -> TypedValue {
        .stringVariantDictionary([
            ("title", .string("Quarterly report 2024 Q3, section 3: regional figures")),
            ("content-description", .string("Edited 5 minutes ago, 12 pages, shared with Finance")),
            ("keywords", .stringArray(["report", "quarterly", "finance", "draft"])),
            ("user-info", .stringVariantDictionary([
                ("document-uri", .string("file:///home/user/Documents/quarterly-report-q3.odt")),
                ("page", .uint32(3)),
                ("selection", .structure([.int32(1_204), .int32(1_348)])),
                ("zoom", .double(1.25)),
            ])),
            ("webpage-url", .string("https://docs.example.com/d/quarterly-report-q3")),
            ("persistent-identifier", .string(persistentIdentifier)),
            ("eligible-for-handoff", .boolean(true)),
        ])
    }
}

/// `CreateActivity` with a ~600-byte properties dictionary. Each created
/// activity is invalidated right after its sample (untimed), so the
/// connection never nears the 256 live activities it may hold.
final class CreateActivityBenchmark: Benchmark {
    private let properties = DocumentActivity.properties(persistentIdentifier: "doc-7f3c2a9e-quarterly-report-q3")
    private var bodyBytes = 0

    func setUp(_ session: BenchSession) throws {
        bodyBytes = try makeMessage(session).marshalledBodyLength()
    }

    private func makeMessage(_ session: BenchSession) throws -> Message {
        try session.message(Service.managerPath, Service.managerInterface, "CreateActivity",
                            [.string(Fixture.activityType), properties])
    }

    func sample(_ session: BenchSession) throws -> UInt64 {
        let message = try makeMessage(session)
        let (nanoseconds, reply) = try session.timedCall(message)
        guard let path = try reply.arguments().first?.objectPathValue else {
            throw BenchError("CreateActivity answered \(try reply.arguments()), not an object path")
        }
        try session.call(path, Service.activityInterface, "Invalidate")
        return nanoseconds
    }

    var facts: [(String, String)] {
        [("properties a{sv}", "\(properties.marshalledSize) bytes marshalled"),
         ("message body (s, a{sv})", "\(bodyBytes) bytes")]
    }
}

/// `Activity.BecomeCurrent`, alternating between two live activities so that
/// every call really changes the session's current activity (and emits
/// PropertiesChanged on both activities and on the manager).
final class BecomeCurrentBenchmark: Benchmark {
    private var paths: [String] = []
    private var next = 0

    func setUp(_ session: BenchSession) throws {
        for name in ["a", "b"] {
            let reply = try session.call(Service.managerPath, Service.managerInterface, "CreateActivity", [
                .string(Fixture.activityType),
                DocumentActivity.properties(persistentIdentifier: "doc-bench-become-current-\(name)"),
            ])
            guard let path = try reply.arguments().first?.objectPathValue else {
                throw BenchError("CreateActivity answered \(try reply.arguments()), not an object path")
            }
            paths.append(path)
        }
        try session.call(paths[0], Service.activityInterface, "BecomeCurrent")
        // A no-op BecomeCurrent would look fast; check it really switches.
        let current = try session.call(Service.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                       [.string(Service.managerInterface), .string("CurrentActivity")])
        guard try current.arguments().first?.unwrappedVariant.objectPathValue == paths[0] else {
            throw BenchError("after BecomeCurrent on \(paths[0]), CurrentActivity is \(try current.arguments())")
        }
        next = 1
    }

    func sample(_ session: BenchSession) throws -> UInt64 {
        let message = try session.message(paths[next], Service.activityInterface, "BecomeCurrent")
        let nanoseconds = try session.timedCall(message).nanoseconds
        next = 1 - next
        return nanoseconds
    }

    func tearDown(_ session: BenchSession) throws {
        for path in paths { try session.call(path, Service.activityInterface, "Invalidate") }
        paths.removeAll()
    }

    var facts: [(String, String)] {
        [("activities", "2 live, alternated; not search/prediction-eligible, so no saved copy is written")]
    }
}
