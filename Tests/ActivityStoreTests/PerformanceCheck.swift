// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import ActivityStore
import Foundation
import Testing
import TypedValues

/// A by-hand performance check, not a timed test: run it with
/// `STORE_PERF=1 swift test -c release --filter PerformanceCheck`
/// and read the printed figures.
@Suite struct PerformanceCheck {
    static let enabled = ProcessInfo.processInfo.environment["STORE_PERF"] == "1"

    @Test(.enabled(if: PerformanceCheck.enabled)) func hundredThousandEntries() throws {
        let temp = try TemporaryDirectory()
        let store = try ActivityStore(directory: temp.path)
        var generator = SplitMix64(seed: 1)
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        let vocabulary = (0..<20_000).map { _ in
            String((0..<Int.random(in: 3...10, using: &generator)).map { _ in letters.randomElement(using: &generator)! })
        }
        func words(_ n: Int) -> String {
            (0..<n).map { _ in vocabulary.randomElement(using: &generator)! }.joined(separator: " ")
        }
        let total = 100_000, batch = 1_000
        let properties: TypedValue = .stringVariantDictionary([
            ("user-info", .variant(.stringVariantDictionary([("page", .uint32(3)), ("path", .string("/home/u/doc.odt"))]))),
        ])
        let loadStart = ContinuousClock.now
        for b in 0..<(total / batch) {
            let records = (0..<batch).map { i -> SavedActivityRecord in
                let n = b * batch + i
                return SavedActivityRecord(
                    appID: "com.example.App\(n % 50)", activityType: "com.example.App\(n % 50).type\(n % 3)",
                    persistentIdentifier: "doc-\(n)", title: words(4) + " everywhere", contentDescription: words(10),
                    keywords: [words(1), words(1)], eligibleForSearch: true, eligibleForPrediction: true,
                    suggestedInvocationPhrase: "Open it", properties: properties)
            }
            // Spread the batches over 200 days so that recency differs.
            try store.saveBatch(records, at: baseTime + Int64(b) * 2 * day + Int64(b % 24) * hour)
        }
        let loadTime = ContinuousClock.now - loadStart
        let now = baseTime + 200 * day

        func measure(_ name: String, runs: Int = 300, _ body: () throws -> Int) rethrows {
            var times: [Double] = []
            var results = 0
            for _ in 0..<runs {
                let start = ContinuousClock.now
                results = try body()
                let elapsed = ContinuousClock.now - start
                times.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
            }
            times.sort()
            let p50 = times[runs / 2], p99 = times[runs * 99 / 100]
            print(String(format: "PERF %-34@ results %4d  p50 %6.3f ms  p99 %6.3f ms", name as NSString, results, p50, p99))
        }
        let rare1 = vocabulary[5], rare2 = vocabulary[7]
        // A real two-word hit: take the words of one title.
        let sample = try #require(try store.search(query: rare1, limit: 1, appID: nil, activityTypes: [], now: now).first)
        let sampleWords = sample.activity.title.split(separator: " ")
        let twoWords = "\(sampleWords[0]) \(sampleWords[1])"
        func search(_ q: String, _ limit: Int = 10, app: String? = nil) throws -> Int {
            try store.search(query: q, limit: limit, appID: app, activityTypes: [], now: now).count
        }
        print("PERF load \(total) entries: \(loadTime)")
        try measure("rare two words '\(twoWords)'") { try search(twoWords) }
        try measure("rare two words, no common hit") { try search("\(rare1) \(rare2)") }
        try measure("prefix 'ev' (every entry)") { try search("ev") }
        try measure("prefix 'b'") { try search("b") }
        try measure("prefix 'everyw' (every entry)") { try search("everyw") }
        try measure("prefix 'everywhere' (every entry)") { try search("everywhere") }
        try measure("prefix of a rare word") { try search(String(rare1.prefix(4))) }
        try measure("every-entry term + word, top 10") { try search("everywhere \(rare1)") }
        try measure("every-entry term, top 10, 1 app") { try search("everywhere", app: "com.example.App7") }
        try measure("every-entry term, top 200") { try search("everywhere", 200) }
        try measure("no match") { try search("zzzzqqq") }
        try measure("no match, prefix") { try search("everywhere zzzzq") }
        try measure("suggestions top 10") { try store.suggestions(limit: 10, appID: nil, now: now).count }
        try measure("suggestions top 10, 1 app") { try store.suggestions(limit: 10, appID: "com.example.App7", now: now).count }
        try measure("suggestions top 200") { try store.suggestions(limit: 200, appID: nil, now: now).count }
        try measure("save (upsert, counts a use)", runs: 1000) {
            try store.save(record(id: "doc-\(Int.random(in: 0..<total, using: &generator))", title: words(4)),
                           at: now)
            return 1
        }
        // What a daemon started on this store pays on its first search: the index is built then.
        let reopened = try ActivityStore(directory: temp.path)
        let buildStart = ContinuousClock.now
        _ = try reopened.search(query: "everywhere", limit: 10, appID: nil, activityTypes: [], now: now)
        print("PERF first search after reopening (builds the search index): \(ContinuousClock.now - buildStart)")
        let info = try store.info()
        let wal = (try? FileManager.default.attributesOfItem(atPath: store.path! + "-wal")[.size] as? Int) ?? 0
        print("PERF database \(info.databaseBytes / 1_000_000) MB (+ WAL \(wal / 1_000_000) MB), \(try store.count()) entries")
    }
}
