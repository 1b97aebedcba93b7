// SPDX-License-Identifier: Apache-2.0
// searchindex-bench: `ActivityStore.search` (the in-memory SearchIndex)
// against an FTS5 table in an in-memory database answering the same queries,
// side by side in one process and one run, at growing store sizes. Samples of
// the two alternate, so machine load falls on both alike; figures are
// per-call latencies (p50/p99), memory and per-row write cost.
import ActivityStore
import CHeapInUse
import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// This thread's CPU time: a sample preempted by another process on a busy
/// machine keeps its own cost, so p99 shows the work, not the scheduler.
func cpuNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

func fail(_ text: String) -> Never {
    FileHandle.standardError.write(Data("searchindex-bench: \(text)\n".utf8))
    exit(1)
}

/// Nearest-rank percentile in µs: always an observed sample.
func percentileMicros(_ samples: [UInt64], _ fraction: Double) -> Double {
    let sorted = samples.sorted()
    let rank = min(max(Int((fraction * Double(sorted.count)).rounded(.up)), 1), sorted.count)
    return Double(sorted[rank - 1]) / 1000
}

// MARK: - Corpus

/// 2 000 pronounceable words: at 100k entries of four title words each, a
/// word is in ~200 titles, so "single word" is neither rare nor common.
let words: [String] = (0..<2_000).map { n in
    let parts = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze"]
    return (0..<4).reduce(into: "") { word, digit in word += parts[(n / [1, 10, 100, 1000][digit]) % 10] }
}

struct Entry {
    var title: String
    var keywords: [String]
    var description: String
}

func entry(_ n: Int) -> Entry {
    var state = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 | 1
    func draw() -> String {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return words[Int(state % UInt64(words.count))]
    }
    // One entry in a thousand holds the rare pair.
    let title = n % 1000 == 500 ? "zygomorph quillwort everywhere" : "everywhere \(draw()) \(draw()) \(draw()) \(draw())"
    return Entry(title: title, keywords: ["bench", draw()], description: "Generated entry \(n) for the search benchmark")
}

let queries: [(kind: String, text: String)] = [
    ("single word", words[17]),
    ("prefix", "kalo"),
    ("multi-word (3)", "everywhere bench \(words[17])"),
    ("rare two words", "zygomorph quillwort"),
    ("common (every entry)", "everywhere"),
    ("no match", "xylophonic"),
]

let appID = "org.example.SearchBench"
let activityType = "org.example.searchbench.view"

func record(_ n: Int) -> SavedActivityRecord {
    let e = entry(n)
    return SavedActivityRecord(appID: appID, activityType: activityType, persistentIdentifier: "bench-\(n)",
                               title: e.title, contentDescription: e.description, keywords: e.keywords,
                               eligibleForSearch: true)
}

// MARK: - The FTS5 side

/// What replacing SearchIndex by FTS5 would query: an external-content FTS5
/// table over the three searchable columns, with the store's tokenizer and
/// prefix indexes, in a database that is never on disk.
final class FTSSide {
    let db: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init() {
        var handle: OpaquePointer?
        guard sqlite3_open(":memory:", &handle) == SQLITE_OK, let handle else { fail("sqlite3_open") }
        db = handle
        exec("""
            CREATE TABLE entries(id INTEGER PRIMARY KEY, title TEXT NOT NULL, keywords TEXT NOT NULL,
                                 content_description TEXT NOT NULL, last_used INTEGER NOT NULL);
            CREATE VIRTUAL TABLE entries_fts USING fts5(
                title, keywords, content_description, content = 'entries', content_rowid = 'id',
                tokenize = "unicode61 remove_diacritics 2", prefix = '1 2 3');
            """)
    }

    func exec(_ sql: String) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            fail("\(sql): \(message.map { String(cString: $0) } ?? "?")")
        }
    }

    func statement(_ sql: String) -> OpaquePointer {
        if let cached = statements[sql] {
            sqlite3_reset(cached)
            sqlite3_clear_bindings(cached)
            return cached
        }
        var made: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &made, nil) == SQLITE_OK, let made else {
            fail("prepare \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        statements[sql] = made
        return made
    }

    func bind(_ s: OpaquePointer, _ index: Int32, _ text: String) {
        sqlite3_bind_text(s, index, text, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
    }

    /// Content rows only (the index is built afterwards by `rebuild`).
    func addContent(_ n: Int) {
        let e = entry(n)
        let s = statement("INSERT INTO entries VALUES (?1, ?2, ?3, ?4, ?1)")
        sqlite3_bind_int64(s, 1, Int64(n + 1))
        bind(s, 2, e.title); bind(s, 3, e.keywords.joined(separator: "\n")); bind(s, 4, e.description)
        guard sqlite3_step(s) == SQLITE_DONE else { fail("insert: \(String(cString: sqlite3_errmsg(db)))") }
    }

    /// One row and its index entry, as a Donate would write them.
    func insert(_ n: Int, indexed: Bool) {
        exec("BEGIN")
        addContent(n)
        if indexed {
            let s = statement("INSERT INTO entries_fts(rowid, title, keywords, content_description) SELECT id, title, keywords, content_description FROM entries WHERE id = ?1")
            sqlite3_bind_int64(s, 1, Int64(n + 1))
            guard sqlite3_step(s) == SQLITE_DONE else { fail("fts insert: \(String(cString: sqlite3_errmsg(db)))") }
        }
        exec("COMMIT")
    }

    func delete(_ n: Int, indexed: Bool) {
        exec("BEGIN")
        if indexed {
            let s = statement("INSERT INTO entries_fts(entries_fts, rowid, title, keywords, content_description) SELECT 'delete', id, title, keywords, content_description FROM entries WHERE id = ?1")
            sqlite3_bind_int64(s, 1, Int64(n + 1))
            guard sqlite3_step(s) == SQLITE_DONE else { fail("fts delete: \(String(cString: sqlite3_errmsg(db)))") }
        }
        let s = statement("DELETE FROM entries WHERE id = ?1")
        sqlite3_bind_int64(s, 1, Int64(n + 1))
        guard sqlite3_step(s) == SQLITE_DONE else { fail("delete: \(String(cString: sqlite3_errmsg(db)))") }
        exec("COMMIT")
    }

    /// The store's Search semantics: every word, the last one also as a
    /// prefix; the newest 100 candidates ranked by BM25 with the store's
    /// column weights (title 3, keywords 2, description 1); the best 20 rows
    /// read. Unranked, the newest 20 are read: the floor of FTS5's matching
    /// cost, since FTS5's BM25 counts every match of every term for its IDF.
    func search(_ query: String, ranked rank: Bool = true) -> Int {
        let tokens = query.split(separator: " ")
        guard !tokens.isEmpty else { return 0 }
        let match = tokens.enumerated().map { index, token in
            "\"" + token.replacingOccurrences(of: "\"", with: "\"\"") + "\"" + (index == tokens.count - 1 ? " *" : "")
        }.joined(separator: " ")
        let s = rank
            ? statement("SELECT rowid, bm25(entries_fts, 3.0, 2.0, 1.0) FROM entries_fts WHERE entries_fts MATCH ?1 ORDER BY rowid DESC LIMIT 100")
            : statement("SELECT rowid, 0.0 FROM entries_fts WHERE entries_fts MATCH ?1 ORDER BY rowid DESC LIMIT 20")
        bind(s, 1, match)
        var ranked: [(rowID: Int64, score: Double)] = []
        while sqlite3_step(s) == SQLITE_ROW {
            ranked.append((sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)))
        }
        let best = ranked.sorted { $0.score != $1.score ? $0.score < $1.score : $0.rowID > $1.rowID }.prefix(20)
        var read = 0
        for candidate in best {
            let row = statement("SELECT title, keywords, content_description, last_used FROM entries WHERE id = ?1")
            sqlite3_bind_int64(row, 1, candidate.rowID)
            if sqlite3_step(row) == SQLITE_ROW, sqlite3_column_text(row, 0) != nil { read += 1 }
        }
        return read
    }
}

// MARK: - Run

let arguments = CommandLine.arguments.dropFirst()
let sizes = arguments.isEmpty ? [1_000, 10_000, 100_000] : arguments.map { argument -> Int in
    guard let size = Int(argument), size > 0 else { fail("not a size: \(argument)") }
    return size
}
let samples = 400
let writes = 200
let searchTime: Int64 = 1 << 50

var template = Array("/tmp/searchindex-bench-XXXXXX".utf8CString)
guard let directoryPointer = mkdtemp(&template) else { fail("mkdtemp") }
let directory = String(cString: directoryPointer)
defer { try? FileManager.default.removeItem(atPath: directory) }

do {
    let grower = try ActivityStore(directory: directory)
    let fts = FTSSide()
    var saved = 0
    print("searchindex-bench: ActivityStore.search (SearchIndex) vs an FTS5 table in :memory:, \(samples) interleaved samples per query; same corpus, same tokenizer")
    print("machine: \(ProcessInfo.processInfo.activeProcessorCount) CPU(s), load average \((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?")")
    for size in sizes {
        // Grow both to `size` entries; the FTS index is rebuilt from its content afterwards.
        while saved < size {
            let batch = min(5_000, size - saved)
            _ = try grower.saveBatch((saved..<(saved + batch)).map(record), at: Int64(saved + batch))
            fts.exec("BEGIN")
            for n in saved..<(saved + batch) { fts.addContent(n) }
            fts.exec("COMMIT")
            saved += batch
        }
        print("\n== \(size) entries ==")

        // Build cost and memory: a fresh store handle builds its index on the first search.
        let store = try ActivityStore(directory: directory)
        var sqliteBefore = sqlite3_memory_used()
        var heapBefore = heap_in_use()
        var begin = now()
        _ = try store.search(query: "xylophonic", limit: 20, appID: nil, activityTypes: [], now: searchTime)
        let indexBuild = Double(now() - begin) / 1e6
        let indexBytes = Int64(heap_in_use()) - Int64(heapBefore) - (sqlite3_memory_used() - sqliteBefore)
        sqliteBefore = sqlite3_memory_used()
        heapBefore = heap_in_use()
        begin = now()
        fts.exec("INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')")
        let ftsBuild = Double(now() - begin) / 1e6
        let ftsBytes = sqlite3_memory_used() - sqliteBefore
        print(String(format: "memory: SearchIndex %.1f MiB (built in %.0f ms); FTS5 %.1f MiB (rebuilt in %.0f ms)",
                     Double(indexBytes) / 1_048_576, indexBuild, Double(ftsBytes) / 1_048_576, ftsBuild))

        // Wall time is what a caller waits; thread CPU time is the same
        // sample without the waits another process's load adds.
        var wallRows: [String] = [], cpuRows: [String] = []
        for query in queries {
            var wall: [[UInt64]] = [[], [], []], cpu: [[UInt64]] = [[], [], []]
            var ourHits = 0, theirHits = 0
            for round in 0..<(samples + 10) {
                var times: [(UInt64, UInt64)] = [(now(), cpuNow())]
                ourHits = try store.search(query: query.text, limit: 20, appID: nil, activityTypes: [], now: searchTime).count
                times.append((now(), cpuNow()))
                theirHits = fts.search(query.text)
                times.append((now(), cpuNow()))
                _ = fts.search(query.text, ranked: false)
                times.append((now(), cpuNow()))
                guard round >= 10 else { continue }
                for side in 0..<3 {
                    wall[side].append(times[side + 1].0 - times[side].0)
                    cpu[side].append(times[side + 1].1 - times[side].1)
                }
            }
            func row(_ sides: [[UInt64]], hits: Bool) -> String {
                let cells = sides.map { String(format: "%7.1f / %-9.1f", percentileMicros($0, 0.5), percentileMicros($0, 0.99)) }
                let ourP99 = percentileMicros(sides[0], 0.99)
                return query.kind.padding(toLength: 22, withPad: " ", startingAt: 0) + " " + cells.joined(separator: "  ")
                    + String(format: "  %5.1f×, %5.1f×", percentileMicros(sides[1], 0.99) / ourP99, percentileMicros(sides[2], 0.99) / ourP99)
                    + (hits ? "  \(ourHits)/\(theirHits)" : "")
            }
            wallRows.append(row(wall, hits: true))
            cpuRows.append(row(cpu, hits: false))
        }
        let header = "SearchIndex          FTS5 + bm25          FTS5 unranked        p99 ratio bm25, unranked"
        print("wall p50 / p99 µs      " + header + "  hits (ours/FTS5)")
        wallRows.forEach { print($0) }
        print("thread CPU p50 / p99   " + header)
        cpuRows.forEach { print($0) }

        // Write cost per row, each its own transaction: with the index
        // against the same store handle kind without one (never searched).
        func storeWrites(_ handle: ActivityStore, from start: Int) throws -> (save: Double, delete: Double) {
            var ids: [String] = []
            var t = now()
            for n in start..<(start + writes) { ids.append(try handle.save(record(n), at: Int64(n))) }
            let save = Double(now() - t) / Double(writes) / 1000
            t = now()
            for id in ids { _ = try handle.delete(savedID: id) }
            return (save, Double(now() - t) / Double(writes) / 1000)
        }
        let withIndex = try storeWrites(store, from: 10_000_000)
        let plain = try storeWrites(try ActivityStore(directory: directory), from: 20_000_000)
        func ftsWrites(indexed: Bool, from start: Int) -> (save: Double, delete: Double) {
            var t = now()
            for n in start..<(start + writes) { fts.insert(n, indexed: indexed) }
            let save = Double(now() - t) / Double(writes) / 1000
            t = now()
            for n in start..<(start + writes) { fts.delete(n, indexed: indexed) }
            return (save, Double(now() - t) / Double(writes) / 1000)
        }
        let ftsIndexed = ftsWrites(indexed: true, from: 30_000_000)
        let ftsPlain = ftsWrites(indexed: false, from: 40_000_000)
        print(String(format: "write µs/row (save, delete): store with SearchIndex %.1f, %.1f; without %.1f, %.1f | :memory: rows with FTS5 %.1f, %.1f; without %.1f, %.1f",
                     withIndex.save, withIndex.delete, plain.save, plain.delete,
                     ftsIndexed.save, ftsIndexed.delete, ftsPlain.save, ftsPlain.delete))
    }
} catch {
    fail("\(error)")
}
