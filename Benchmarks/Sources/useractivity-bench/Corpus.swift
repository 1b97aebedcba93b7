// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The generated saved-activity corpus shared by `--store` and the Zeitgeist
/// comparison: entry `n` is the same text in every store and every run.
///
/// Each title holds "everywhere" (a term in every entry) and four words drawn
/// with a fixed seed from a 20 000-word vocabulary; the keywords are "bench"
/// and one vocabulary word; the description names the entry. The four query
/// kinds the targets name exist at every size: a rare two-word query (entries
/// titled with ``rareTitle``, one added per size step), a prefix (the last
/// word), a term in every entry, and a word in no entry.
enum Corpus {
    /// Pronounceable, distinct words, never a prefix of "everywhere" or of the rare words.
    static let vocabulary: [String] = (0..<20_000).map { n in
        let syllables = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze"]
        var word = ""
        var value = n
        for _ in 0..<5 { word += syllables[value % 10]; value /= 10 }
        return word
    }

    static let rareTitle = "zygomorph quillwort everywhere"

    /// The query kinds, in report order: name, our query, Zeitgeist's (Xapian)
    /// query, result limit.
    static let queries: [(kind: String, ours: String, zeitgeist: String, limit: UInt32)] = [
        ("rare two words", "zygomorph quillwort", "zygomorph quillwort", 20),
        // Our Search treats the last word as a prefix; Xapian wants the wildcard spelled out.
        ("prefix (last word)", "everywhere kalo", "everywhere kalo*", 20),
        ("term in every entry, top 10", "everywhere", "everywhere", 10),
        ("no match", "xylophonic", "xylophonic", 20),
    ]

    static func title(_ n: Int) -> String {
        // Seeded: titles must be the same in every run.
        var generator = SplitMix64(seed: UInt64(n) &+ 0x9E37)
        let words = (0..<4).map { _ in vocabulary[Int(generator.next() % UInt64(vocabulary.count))] }
        return "everywhere " + words.joined(separator: " ")
    }

    static func keywords(_ n: Int) -> [String] {
        ["bench", vocabulary[(n * 7) % vocabulary.count]]
    }

    static func description(_ n: Int) -> String {
        "Generated entry \(n) for the store benchmark"
    }

    /// `Donate(s, a{sv})` arguments for entry `n`.
    static func donation(_ n: Int, title: String) -> [TypedValue] {
        [.string(Fixture.activityType), .stringVariantDictionary([
            ("title", .string(title)),
            ("keywords", .stringArray(keywords(n))),
            ("content-description", .string(description(n))),
            ("persistent-identifier", .string("bench-\(n)")),
            ("eligible-for-search", .boolean(true)),
            ("user-info", .stringVariantDictionary([("n", .int64(Int64(n)))])),
        ])]
    }
}
