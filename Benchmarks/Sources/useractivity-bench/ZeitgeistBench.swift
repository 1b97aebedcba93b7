// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Zeitgeist's D-Bus names and the events the bench gives it.
enum Zeitgeist {
    static let engineName = "org.gnome.zeitgeist.Engine"
    static let indexerName = "org.gnome.zeitgeist.SimpleIndexer"
    static let logPath = "/org/gnome/zeitgeist/log/activity"
    static let logInterface = "org.gnome.zeitgeist.Log"
    static let indexPath = "/org/gnome/zeitgeist/index/activity"
    static let indexInterface = "org.gnome.zeitgeist.Index"
    /// `Index.Search` result type: ranked by Xapian relevance, like our Search's score.
    static let relevancyResultType: UInt32 = 100

    static let accessEvent = "http://www.zeitgeist-project.com/ontologies/2010/01/27/zg#AccessEvent"
    static let userActivity = "http://www.zeitgeist-project.com/ontologies/2010/01/27/zg#UserActivity"
    static let document = "http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#Document"
    static let remoteDataObject = "http://www.semanticdesktop.org/ontologies/2007/03/22/nfo#RemoteDataObject"
    static let actor = "application://\(Fixture.appID).desktop"
    static let origin = "https://bench.example.com/entry/"

    /// Entry `n` of ``Corpus`` as one Zeitgeist event `(as, aas, ay)`.
    ///
    /// Zeitgeist has no keywords or description: the subject text carries the
    /// title, the keywords and the description, the three fields our Search
    /// reads, so both indexes hold the same words. The subject URI is an
    /// https URL because zeitgeist-fts indexes only events whose URI scheme it
    /// knows (file, http(s), ftp, ssh, smb, dav, application).
    static func event(_ n: Int, title: String, timestampMilliseconds: Int64) -> TypedValue {
        let uri = origin + "\(n)"
        let text = ([title] + Corpus.keywords(n) + [Corpus.description(n)]).joined(separator: " ")
        return .structure([
            // id, timestamp, interpretation, manifestation, actor, origin
            .stringArray(["", "\(timestampMilliseconds)", accessEvent, userActivity, actor, ""]),
            // uri, interpretation, manifestation, origin, mimetype, text, storage, current uri, current origin
            .array(elementType: "as", [.stringArray([uri, document, remoteDataObject, origin, "text/plain", text, "",
                                                     uri, origin])]),
            .array(elementType: "y", []),
        ])
    }

    static func events(_ values: [TypedValue]) -> TypedValue { .array(elementType: "(asaasay)", values) }
}

struct InsertFigures: Codable {
    /// Sequential calls, one entry per call, each waiting for its reply: 1 / mean round trip.
    var callsPerSecond: Double
    var latency: LatencySummary
    /// CPU per call in µs: the service (for Zeitgeist: zeitgeist-daemon plus
    /// zeitgeist-fts, whose indexing of the block is waited for) and dbus-daemon.
    var serviceCpuUsPerCall: Double?
    var busCpuUsPerCall: Double?
}

/// One-entry inserts with several calls in flight on one connection, the
/// same number on both sides: throughput rather than round trips.
struct PipelinedInsertFigures: Codable {
    var depth: Int
    var callsPerSide: Int
    var oursCallsPerSecond: Double
    var zeitgeistCallsPerSecond: Double
    /// ours ÷ Zeitgeist.
    var ratio: Double
}

struct QueryFigures: Codable {
    var kind: String
    var oursQuery: String
    var zeitgeistQuery: String
    var limit: UInt32
    var ours: LatencySummary
    var zeitgeist: LatencySummary
    var oursResults: Int
    var zeitgeistResults: Int
    var zeitgeistMatches: Int?
    /// ours p50 / Zeitgeist p50.
    var p50Ratio: Double
    /// p50 of the samples taken right after the other side's round (its
    /// queries evicted this side's data from the CPU caches) and right after
    /// this side's own previous round: rounds alternate which side goes
    /// first, so each side has half of each.
    var oursAfterZeitgeistP50Us: Double
    var oursAfterOursP50Us: Double
    var zeitgeistAfterOursP50Us: Double
    var zeitgeistAfterZeitgeistP50Us: Double
}

struct StoreSizeFigures: Codable {
    var entries: Int
    var oursInsert: InsertFigures
    var zeitgeistInsert: InsertFigures
    /// ours calls/s ÷ Zeitgeist calls/s.
    var insertRatio: Double
    var pipelinedInserts: PipelinedInsertFigures
    var oursPing: LatencySummary
    var zeitgeistPing: LatencySummary
    var queries: [QueryFigures]
    var oursWorstKind: String
    var zeitgeistWorstKind: String
    /// ours worst-kind p50 / Zeitgeist worst-kind p50.
    var worstP50Ratio: Double
    var oursRssKib: Int?
    var oursPeakRssKib: Int?
    var zeitgeistDaemonRssKib: Int?
    var zeitgeistFtsRssKib: Int?
    var oursDiskBytes: Int
    var zeitgeistDatabaseBytes: Int
    var zeitgeistIndexBytes: Int
    /// Untimed bulk fills, for information only (they overlap Zeitgeist's background indexing).
    var oursFillPerSecond: Double?
    var zeitgeistFillEventsPerSecond: Double?
    var zeitgeistIndexCatchUpSeconds: Double
}

struct ZeitgeistFigures: Codable {
    var version: String
    var daemonPath: String
    var ftsPath: String?
    /// "org.gnome.zeitgeist.Index.Search (zeitgeist-fts, …)" or the FindEvents fallback.
    var searchMethod: String
    var searchComparable: Bool
    var durability: String
    var dataDirectory: String
    var fillBatch: Int
    var insertSamples: Int
    var searchSamples: Int
    var daemonPid: Int32
    var ftsPid: Int32?
    var daemonRssKibIdle: Int?
    var ftsRssKibIdle: Int?
    var sizes: [StoreSizeFigures]
    var notes: [String]
}

/// `--zeitgeist`: our durable Donate and Search against Zeitgeist's
/// InsertEvents and full-text search, both filled with ``Corpus`` on the same
/// private bus, at each store size.
final class ZeitgeistBench {
    let session: BenchSession
    let sizes: [Int]
    let searchSamples: Int
    let insertSamples: Int
    let fillBatch: Int
    let daemonPath: String
    let ftsPath: String?
    let progress: (String) -> Void

    let root: String
    let dataPath: String
    private(set) var daemonPID: Int32 = 0
    private(set) var ftsPID: Int32?
    private var useIndex = false
    private var notes: [String] = []
    /// Entries in each store (the same numbering on both sides).
    private var filled = 0
    private let baseTimestamp = Int64(Date().timeIntervalSince1970 * 1000) - 1_000_000_000

    init(session: BenchSession, sizes: [Int], searchSamples: Int, insertSamples: Int, fillBatch: Int,
         daemonPath: String, ftsPath: String?, progress: @escaping (String) -> Void) throws {
        self.session = session
        self.sizes = sizes
        self.searchSamples = searchSamples
        self.insertSamples = insertSamples
        self.fillBatch = fillBatch
        self.daemonPath = daemonPath
        self.ftsPath = ftsPath
        self.progress = progress
        // Zeitgeist's own temporary home and XDG directories, beside ours in the session's temp root.
        root = session.session.root + "/zeitgeist-home"
        dataPath = root + "/.local/share/zeitgeist"
        for directory in [dataPath, root + "/.cache", root + "/.config", root + "/.local/state"] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
    }

    private var environment: [String: String] {
        ["HOME": root, "XDG_DATA_HOME": root + "/.local/share", "XDG_CACHE_HOME": root + "/.cache",
         "XDG_CONFIG_HOME": root + "/.config", "XDG_STATE_HOME": root + "/.local/state",
         "ZEITGEIST_DATA_PATH": dataPath]
    }

    // MARK: Start

    /// Installs both services on the bus, activates Zeitgeist and waits for its indexer.
    func start() throws -> (daemonRSS: Int?, ftsRSS: Int?) {
        // Started the way a session starts them: D-Bus activation (no datahub,
        // which would log the bench user's real files).
        try session.bus.installService(name: Zeitgeist.engineName, exec: shellQuote(daemonPath) + " --no-datahub",
                                       extraEnvironment: environment)
        if let ftsPath {
            try session.bus.installService(name: Zeitgeist.indexerName, exec: shellQuote(ftsPath),
                                           extraEnvironment: environment)
        }
        _ = try session.call(Zeitgeist.logPath, "org.freedesktop.DBus.Peer", "Ping",
                             destination: Zeitgeist.engineName, timeoutMilliseconds: 30_000)
        daemonPID = try ProcessFigures.pid(of: Zeitgeist.engineName, session: session)
        // Its FTS extension activates zeitgeist-fts at start.
        let deadline = monotonicNanoseconds() + 15_000_000_000
        while ftsPath != nil, monotonicNanoseconds() < deadline {
            if try ProcessFigures.hasOwner(Zeitgeist.indexerName, session: session) {
                ftsPID = try ProcessFigures.pid(of: Zeitgeist.indexerName, session: session)
                break
            }
            usleep(100_000)
        }
        useIndex = ftsPID != nil
        if !useIndex {
            notes.append("zeitgeist-fts did not start: Search compared with Log.FindEvents and an exact subject-text template, the only text match Zeitgeist has without it (not a word search, so the Search ratios are not comparable)")
        }
        usleep(500_000)
        return (BenchSession.memory(of: daemonPID)?.rssKiB, ftsPID.flatMap { BenchSession.memory(of: $0)?.rssKiB })
    }

    private func version() -> String {
        guard let reply = try? session.call(Zeitgeist.logPath, "org.freedesktop.DBus.Properties", "Get",
                                            [.string(Zeitgeist.logInterface), .string("version")],
                                            destination: Zeitgeist.engineName),
              case .structure(let fields)? = (try? reply.arguments())?.first?.unwrappedVariant
        else { return "unknown" }
        return fields.compactMap { value -> String? in
            if case .int32(let v) = value { return String(v) }
            return nil
        }.joined(separator: ".")
    }

    // MARK: Messages

    private func donateMessage(_ n: Int, title: String) throws -> Message {
        try session.message(Service.managerPath, Service.managerInterface, "Donate", Corpus.donation(n, title: title))
    }

    private func insertMessage(_ range: Range<Int>, rareAt rare: Int? = nil) throws -> Message {
        let events = range.map { n in
            Zeitgeist.event(n, title: n == rare ? Corpus.rareTitle : Corpus.title(n),
                            timestampMilliseconds: baseTimestamp + Int64(n))
        }
        return try session.message(Zeitgeist.logPath, Zeitgeist.logInterface, "InsertEvents",
                                   [Zeitgeist.events(events)], destination: Zeitgeist.engineName)
    }

    private func checkInserted(_ reply: Message, count: Int) throws {
        guard case .array(_, let ids)? = try reply.arguments().first, ids.count == count,
              ids.allSatisfy({ ($0.uint32Value ?? 0) != 0 })
        else { throw BenchError("Zeitgeist refused events: InsertEvents answered \(try reply.arguments())") }
    }

    private func oursSearchMessage(_ query: String, limit: UInt32) throws -> Message {
        try session.message(Service.managerPath, Service.managerInterface, "Search",
                            [.string(query), .stringVariantDictionary([("limit", .uint32(limit))])])
    }

    private func zeitgeistSearchMessage(_ query: String, limit: UInt32) throws -> Message {
        if useIndex {
            return try session.message(Zeitgeist.indexPath, Zeitgeist.indexInterface, "Search", [
                .string(query), .structure([.int64(0), .int64(Int64.max)]), Zeitgeist.events([]),
                .uint32(0), .uint32(limit), .uint32(Zeitgeist.relevancyResultType),
            ], destination: Zeitgeist.engineName)
        }
        let template = TypedValue.structure([
            .stringArray(["", "", "", "", "", ""]),
            .array(elementType: "as", [.stringArray(["", "", "", "", "", query, "", "", ""])]),
            .array(elementType: "y", []),
        ])
        // storage state 2 = any; result type 0 = most recent events.
        return try session.message(Zeitgeist.logPath, Zeitgeist.logInterface, "FindEvents", [
            .structure([.int64(0), .int64(Int64.max)]), Zeitgeist.events([template]), .uint32(2), .uint32(limit), .uint32(0),
        ], destination: Zeitgeist.engineName)
    }

    /// 0 when there are no samples (a run of one round fills one slot only).
    private static func p50Us(_ samples: [UInt64]) -> Double {
        samples.isEmpty ? 0 : LatencySummary(nanoseconds: samples).p50Us
    }

    private static func resultCount(_ reply: Message) throws -> (results: Int, matches: Int?) {
        let arguments = try reply.arguments()
        guard case .array(_, let elements)? = arguments.first else {
            throw BenchError("a search answered \(arguments), not a list of results")
        }
        return (elements.count, arguments.count > 1 ? arguments[1].uint32Value.map(Int.init) : nil)
    }

    // MARK: Waiting for Zeitgeist's indexer

    /// Waits until zeitgeist-fts has indexed every event (a term every entry
    /// holds matches them all) and has gone idle, so its background work does
    /// not land on the next measurement. Returns the seconds waited.
    @discardableResult
    private func waitForIndex() throws -> Double {
        let begin = monotonicNanoseconds()
        guard useIndex, ftsPID != nil else { return 0 }
        let deadline = begin + UInt64(max(120, filled / 100)) * 1_000_000_000
        while true {
            let reply = try session.connection.call(try zeitgeistSearchMessage("everywhere", limit: 1), timeoutMilliseconds: 120_000)
            if let matches = try Self.resultCount(reply).matches, matches >= filled { break }
            guard monotonicNanoseconds() < deadline else {
                notes.append("zeitgeist-fts had not indexed all \(filled) events after \((monotonicNanoseconds() - begin) / 1_000_000_000) s")
                break
            }
            usleep(200_000)
        }
        waitForQuiet()
        return Double(monotonicNanoseconds() - begin) / 1e9
    }

    /// Waits until zeitgeist-daemon and zeitgeist-fts together use under 2 ms
    /// of CPU in 200 ms (at most a minute).
    private func waitForQuiet() {
        for _ in 0..<300 {
            let before = (ftsPID.flatMap { BenchSession.cpuNanoseconds(of: $0) } ?? 0) + (BenchSession.cpuNanoseconds(of: daemonPID) ?? 0)
            usleep(200_000)
            let after = (ftsPID.flatMap { BenchSession.cpuNanoseconds(of: $0) } ?? 0) + (BenchSession.cpuNanoseconds(of: daemonPID) ?? 0)
            if after &- before < 2_000_000 { break }
        }
    }

    // MARK: Phases

    /// Untimed bulk fill of both stores from `filled` up to `target` entries.
    private func fill(to target: Int) throws -> (ours: Double?, zeitgeist: Double?) {
        guard target > filled else { return (nil, nil) }
        progress("zeitgeist: filling both stores \(filled) → \(target) entries (Zeitgeist in batches of \(fillBatch) events per InsertEvents, ours with 32 Donates in flight)…")
        // Zeitgeist first: its indexer then works through the backlog while ours fills.
        var begin = monotonicNanoseconds()
        var start = filled
        while start < target {
            let end = min(target, start + fillBatch)
            let reply = try session.connection.call(try insertMessage(start..<end), timeoutMilliseconds: 600_000)
            try checkInserted(reply, count: end - start)
            start = end
        }
        let zeitgeistRate = Double(target - filled) / (Double(monotonicNanoseconds() - begin) / 1e9)
        begin = monotonicNanoseconds()
        var next = filled
        while next < target {
            let end = min(target, next + 5000)
            let messages = try (next..<end).map { try donateMessage($0, title: Corpus.title($0)) }
            _ = try Pipeline.run(session.connection, messages: messages, depth: 32)
            next = end
        }
        let oursRate = Double(target - filled) / (Double(monotonicNanoseconds() - begin) / 1e9)
        filled = target
        return (oursRate, zeitgeistRate)
    }

    /// Sequential one-entry inserts on both sides, in alternating blocks.
    private func timedInserts() throws -> (ours: InsertFigures, zeitgeist: InsertFigures) {
        let blocks = 4
        let perBlock = max(1, insertSamples / blocks)
        progress("zeitgeist: \(perBlock * blocks) sequential one-entry inserts on each side (Donate / InsertEvents), in \(blocks) alternating blocks…")
        var ours: [UInt64] = [], theirs: [UInt64] = []
        var oursCPU: UInt64 = 0, theirCPU: UInt64 = 0, oursBus: UInt64 = 0, theirBus: UInt64 = 0
        var cpuKnown = true
        func cpu(_ pids: [Int32?]) -> UInt64? {
            var total: UInt64 = 0
            for pid in pids {
                guard let pid else { continue }
                guard let ns = BenchSession.cpuNanoseconds(of: pid) else { return nil }
                total += ns
            }
            return total
        }
        for block in 0..<blocks {
            // The same entries go to both stores; the side that goes first alternates.
            let first = filled
            filled += perBlock
            for side in (block % 2 == 0 ? [0, 1] : [1, 0]) {
                if side == 0 {
                    let messages = try (first..<(first + perBlock)).map { try donateMessage($0, title: Corpus.title($0)) }
                    let before = cpu([session.daemonPID]), busBefore = cpu([session.bus.pid])
                    for message in messages {
                        let (ns, reply) = try session.timedCall(message)
                        guard try reply.arguments().first?.stringValue?.isEmpty == false else {
                            throw BenchError("Donate answered \(try reply.arguments()): nothing was saved")
                        }
                        ours.append(ns)
                    }
                    if let before, let after = cpu([session.daemonPID]), let busBefore, let busAfter = cpu([session.bus.pid]) {
                        oursCPU += after - before
                        oursBus += busAfter - busBefore
                    } else { cpuKnown = false }
                } else {
                    let messages = try (first..<(first + perBlock)).map { try insertMessage($0..<($0 + 1)) }
                    let before = cpu([daemonPID, ftsPID]), busBefore = cpu([session.bus.pid])
                    for message in messages {
                        let (ns, reply) = try session.timedCall(message)
                        try checkInserted(reply, count: 1)
                        theirs.append(ns)
                    }
                    // Zeitgeist indexes after its reply: that work is part of an insert's cost.
                    // CPU is read once it is done, before the (search) check that it is.
                    waitForQuiet()
                    if let before, let after = cpu([daemonPID, ftsPID]), let busBefore, let busAfter = cpu([session.bus.pid]) {
                        theirCPU += after - before
                        theirBus += busAfter - busBefore
                    } else { cpuKnown = false }
                    try waitForIndex()
                }
            }
        }
        func figures(_ samples: [UInt64], _ service: UInt64, _ bus: UInt64) -> InsertFigures {
            let latency = LatencySummary(nanoseconds: samples)
            return InsertFigures(callsPerSecond: 1e6 / latency.meanUs, latency: latency,
                                 serviceCpuUsPerCall: cpuKnown ? Double(service) / Double(samples.count) / 1000 : nil,
                                 busCpuUsPerCall: cpuKnown ? Double(bus) / Double(samples.count) / 1000 : nil)
        }
        return (figures(ours, oursCPU, oursBus), figures(theirs, theirCPU, theirBus))
    }

    /// Calls in flight in the pipelined insert pass, on each side.
    static let insertDepth = 16

    /// `insertSamples` one-entry inserts per side with ``insertDepth`` calls
    /// in flight: ours first, then Zeitgeist (whose indexing after its
    /// replies is then waited for, so that it does not run into what follows).
    private func pipelinedInserts() throws -> PipelinedInsertFigures {
        let depth = Self.insertDepth
        progress("zeitgeist: \(insertSamples) one-entry inserts on each side with \(depth) in flight…")
        let range = filled..<(filled + insertSamples)
        let ours = try Pipeline.run(session.connection, messages: try range.map { try donateMessage($0, title: Corpus.title($0)) },
                                    depth: depth) { reply in
            guard try reply.arguments().first?.stringValue?.isEmpty == false else {
                throw BenchError("Donate answered \(try reply.arguments()): nothing was saved")
            }
            return .none
        }
        let theirs = try Pipeline.run(session.connection, messages: try range.map { try insertMessage($0..<($0 + 1)) },
                                      depth: depth) { reply in
            try self.checkInserted(reply, count: 1)
            return .none
        }
        filled += insertSamples
        waitForQuiet()
        try waitForIndex()
        return PipelinedInsertFigures(depth: depth, callsPerSide: insertSamples,
                                      oursCallsPerSecond: ours.callsPerSecond, zeitgeistCallsPerSecond: theirs.callsPerSecond,
                                      ratio: ours.callsPerSecond / theirs.callsPerSecond)
    }

    /// Search latency, both sides interleaved in every round.
    private func searches() throws -> (ours: LatencySummary, theirs: LatencySummary, queries: [QueryFigures]) {
        let queries = Corpus.queries
        progress("zeitgeist: \(searchSamples) rounds of Ping + \(queries.count) queries on each side…")
        let oursMessages = { try queries.map { try self.oursSearchMessage($0.ours, limit: $0.limit) } }
        let theirMessages = { try queries.map { try self.zeitgeistSearchMessage($0.zeitgeist, limit: $0.limit) } }
        var oursPing: [UInt64] = [], theirPing: [UInt64] = []
        var oursTimes = Array(repeating: [UInt64](), count: queries.count)
        var theirTimes = Array(repeating: [UInt64](), count: queries.count)
        // Indexed by whether the side ran second in its round, i.e. right after the other side.
        var oursBySlot = Array(repeating: [[UInt64](), [UInt64]()], count: queries.count)
        var theirBySlot = Array(repeating: [[UInt64](), [UInt64]()], count: queries.count)
        var oursCounts = Array(repeating: 0, count: queries.count)
        var theirCounts = Array(repeating: 0, count: queries.count)
        var theirMatches = [Int?](repeating: nil, count: queries.count)
        let warmup = max(3, searchSamples / 10)
        for round in 0..<(warmup + searchSamples) {
            let record = round >= warmup
            for (slot, side) in zip(0..., round % 2 == 0 ? [0, 1] : [1, 0]) {
                if side == 0 {
                    let ping = try session.timedCall(try session.message(Service.managerPath, "org.freedesktop.DBus.Peer", "Ping")).nanoseconds
                    if record { oursPing.append(ping) }
                    for (index, message) in try oursMessages().enumerated() {
                        let (ns, reply) = try session.timedCall(message)
                        if record { oursTimes[index].append(ns); oursBySlot[index][slot].append(ns) }
                        if round == 0 { oursCounts[index] = try Self.resultCount(reply).results }
                    }
                } else {
                    let ping = try session.timedCall(try session.message(Zeitgeist.logPath, "org.freedesktop.DBus.Peer", "Ping",
                                                                         destination: Zeitgeist.engineName)).nanoseconds
                    if record { theirPing.append(ping) }
                    for (index, message) in try theirMessages().enumerated() {
                        let (ns, reply) = try session.timedCall(message)
                        if record { theirTimes[index].append(ns); theirBySlot[index][slot].append(ns) }
                        if round == 0 { (theirCounts[index], theirMatches[index]) = try Self.resultCount(reply) }
                    }
                }
            }
        }
        var figures: [QueryFigures] = []
        for (index, query) in queries.enumerated() {
            let ours = LatencySummary(nanoseconds: oursTimes[index])
            let theirs = LatencySummary(nanoseconds: theirTimes[index])
            figures.append(QueryFigures(kind: query.kind, oursQuery: query.ours, zeitgeistQuery: query.zeitgeist,
                                        limit: query.limit, ours: ours, zeitgeist: theirs,
                                        oursResults: oursCounts[index], zeitgeistResults: theirCounts[index],
                                        zeitgeistMatches: theirMatches[index], p50Ratio: ours.p50Us / theirs.p50Us,
                                        oursAfterZeitgeistP50Us: Self.p50Us(oursBySlot[index][1]),
                                        oursAfterOursP50Us: Self.p50Us(oursBySlot[index][0]),
                                        zeitgeistAfterOursP50Us: Self.p50Us(theirBySlot[index][1]),
                                        zeitgeistAfterZeitgeistP50Us: Self.p50Us(theirBySlot[index][0])))
        }
        return (LatencySummary(nanoseconds: oursPing), LatencySummary(nanoseconds: theirPing), figures)
    }

    func run(daemonIdle: (Int?, Int?)) throws -> ZeitgeistFigures {
        // The default per-app limit (1000) would trim this single app's entries: lift it, as a user may.
        _ = try session.call(Service.managerPath, "org.freedesktop.DBus.Properties", "Set",
                             [.string(Service.managerInterface), .string("MaxSavedPerApplication"), .variant(.uint32(0))])
        var rows: [StoreSizeFigures] = []
        for size in sizes {
            let (oursFill, theirFill) = try fill(to: max(filled, size - insertSamples / 4 * 4 - insertSamples - 1))
            progress("zeitgeist: waiting for zeitgeist-fts to index \(filled) events…")
            var catchUp = try waitForIndex()
            let (oursInsert, theirInsert) = try timedInserts()
            let pipelined = try pipelinedInserts()
            // One entry with two rare words per size step, on both sides.
            _ = try session.connection.call(donateMessage(filled, title: Corpus.rareTitle))
            try checkInserted(try session.connection.call(insertMessage(filled..<(filled + 1), rareAt: filled)), count: 1)
            filled += 1
            catchUp += try waitForIndex()
            let (oursPing, theirPing, queries) = try searches()
            let oursWorst = queries.max { $0.ours.p50Us < $1.ours.p50Us }!
            let theirWorst = queries.max { $0.zeitgeist.p50Us < $1.zeitgeist.p50Us }!
            let oursMemory = BenchSession.memory(of: session.daemonPID)
            let indexBytes = ProcessFigures.diskUsage(dataPath + "/fts.index")
            rows.append(StoreSizeFigures(
                entries: filled, oursInsert: oursInsert, zeitgeistInsert: theirInsert,
                insertRatio: oursInsert.callsPerSecond / theirInsert.callsPerSecond,
                pipelinedInserts: pipelined,
                oursPing: oursPing, zeitgeistPing: theirPing, queries: queries,
                oursWorstKind: oursWorst.kind, zeitgeistWorstKind: theirWorst.kind,
                worstP50Ratio: oursWorst.ours.p50Us / theirWorst.zeitgeist.p50Us,
                oursRssKib: oursMemory?.rssKiB, oursPeakRssKib: oursMemory?.peakKiB,
                zeitgeistDaemonRssKib: BenchSession.memory(of: daemonPID)?.rssKiB,
                zeitgeistFtsRssKib: ftsPID.flatMap { BenchSession.memory(of: $0)?.rssKiB },
                oursDiskBytes: ProcessFigures.diskUsage(session.session.stateHome + "/useractivity"),
                zeitgeistDatabaseBytes: ProcessFigures.diskUsage(dataPath) - indexBytes,
                zeitgeistIndexBytes: indexBytes,
                oursFillPerSecond: oursFill, zeitgeistFillEventsPerSecond: theirFill,
                zeitgeistIndexCatchUpSeconds: catchUp))
        }
        return ZeitgeistFigures(
            version: version(), daemonPath: daemonPath, ftsPath: useIndex ? ftsPath : nil,
            searchMethod: useIndex
                ? "org.gnome.zeitgeist.Index.Search on \(Zeitgeist.engineName) \(Zeitgeist.indexPath) (forwarded to zeitgeist-fts, Xapian), result type 100 = relevancy"
                : "org.gnome.zeitgeist.Log.FindEvents with an exact subject-text template (zeitgeist-fts not running)",
            searchComparable: useIndex,
            durability: "both reply after an SQLite commit in WAL mode with synchronous=NORMAL; Zeitgeist's full-text index is updated after the reply, asynchronously",
            dataDirectory: dataPath, fillBatch: fillBatch, insertSamples: insertSamples / 4 * 4, searchSamples: searchSamples,
            daemonPid: daemonPID, ftsPid: ftsPID, daemonRssKibIdle: daemonIdle.0, ftsRssKibIdle: daemonIdle.1,
            sizes: rows, notes: notes)
    }
}
