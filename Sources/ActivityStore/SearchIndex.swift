// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The full-text index that answers Search: one posting list per term, held
/// in memory, built from the database when the store opens and changed after
/// every commit that touches a searchable entry.
///
/// Why not FTS5's own query: at 100 000 entries a rare two-word FTS5 query
/// with `highlight()` spent ~120 µs in SQLite with cold caches, and a prefix
/// whose terms are spread over many entries (`everywhere kalo`: 200 terms,
/// 5 000 entries) 1.7 ms, merging every term's doclist from every segment.
/// Here both are a few binary searches and a merge of small arrays, and
/// ranking needs no text: each posting carries the term's count per column.
/// The cost is memory (about 8 bytes per indexed token plus one list per
/// term: ~15 MiB at 100 000 bench entries, nothing for an empty store) and a
/// scan of the searchable entries when the store opens.
///
/// Entries are identified by rowid, which is last-use order (see
/// `Schema.version1`), so the newest matches are at the end of every list.
struct SearchIndex {
    /// One entry in one term's list: where, and how often per column.
    struct Posting {
        var rowID: UInt32
        var title: UInt8
        var keywords: UInt8
        var description: UInt8
    }

    /// What ranking needs of an entry besides its postings.
    struct Document {
        var lastUsed: Int64
        var expiration: Int64
        var titleLength: UInt16
        var keywordsLength: UInt16
        var descriptionLength: UInt16
    }

    /// A searchable entry's indexed fields, as stored.
    struct Entry {
        var rowID: Int64
        var title: String
        var keywords: String
        var description: String
        var appID: String
        var activityType: String
        var lastUsed: Int64
        var expiration: Int64
    }

    /// Hits per column of a candidate: occurrences of distinct query terms.
    struct Hits {
        var title = 0
        var keywords = 0
        var description = 0

        mutating func add(_ posting: Posting) {
            title += Int(posting.title)
            keywords += Int(posting.keywords)
            description += Int(posting.description)
        }

        mutating func add(_ other: Hits) {
            title += other.title
            keywords += other.keywords
            description += other.description
        }
    }

    /// A change made by a transaction, applied to the index once it commits.
    enum Change {
        case add(Entry)
        case remove(Entry)
        /// Read everything again (rowids were renumbered, or another process wrote).
        case rebuild
    }

    private(set) var documents: [UInt32: Document] = [:]
    private var postings: [String: [Posting]] = [:]
    private var appPostings: [String: [Posting]] = [:]
    private var typePostings: [String: [Posting]] = [:]
    /// Every key of `postings` is in exactly one of these two: `sortedTerms`
    /// in UTF-8 byte order (what a prefix means to FTS5 and to users of
    /// non-Latin scripts alike), `recentTerms` unsorted until there are
    /// enough of them to be worth a merge.
    private var sortedTerms: [String] = []
    private var recentTerms: [String] = []

    var documentCount: Int { documents.count }

    // MARK: - Changes

    mutating func removeAll() {
        self = SearchIndex()
    }

    mutating func add(_ entry: Entry, tokenizer: FTS5Tokenizer) {
        // The store keeps rowids within 32 bits (see `ActivityStore.rowIDCeiling`).
        guard let rowID = UInt32(exactly: entry.rowID) else { preconditionFailure("rowid \(entry.rowID) beyond the index") }
        let columns = [tokenizer.tokens(entry.title), tokenizer.tokens(entry.keywords), tokenizer.tokens(entry.description)]
        var counts: [String: Posting] = [:]
        for (column, tokens) in columns.enumerated() {
            for token in tokens {
                counts[token, default: Posting(rowID: rowID, title: 0, keywords: 0, description: 0)].count(column: column)
            }
        }
        for (term, posting) in counts {
            if postings[term] == nil { recentTerms.append(term) }
            Self.insert(posting, into: &postings[term, default: []])
        }
        let scope = Posting(rowID: rowID, title: 0, keywords: 0, description: 0)
        Self.insert(scope, into: &appPostings[entry.appID, default: []])
        Self.insert(scope, into: &typePostings[entry.activityType, default: []])
        documents[rowID] = Document(
            lastUsed: entry.lastUsed, expiration: entry.expiration,
            titleLength: UInt16(clamping: columns[0].count), keywordsLength: UInt16(clamping: columns[1].count),
            descriptionLength: UInt16(clamping: columns[2].count))
        if recentTerms.count > Self.recentTermsLimit { mergeRecentTerms() }
    }

    /// Removes an entry as it was indexed (`entry` holds its old fields).
    mutating func remove(_ entry: Entry, tokenizer: FTS5Tokenizer) {
        guard let rowID = UInt32(exactly: entry.rowID), documents.removeValue(forKey: rowID) != nil else { return }
        var seen = Set<String>()
        for text in [entry.title, entry.keywords, entry.description] {
            for token in tokenizer.tokens(text) where seen.insert(token).inserted {
                Self.remove(rowID, from: &postings[token, default: []])
            }
        }
        Self.remove(rowID, from: &appPostings[entry.appID, default: []])
        if appPostings[entry.appID]?.isEmpty == true { appPostings[entry.appID] = nil }
        Self.remove(rowID, from: &typePostings[entry.activityType, default: []])
        if typePostings[entry.activityType]?.isEmpty == true { typePostings[entry.activityType] = nil }
    }

    /// New rowids are the largest, so this is an append but for re-indexing.
    private static func insert(_ posting: Posting, into list: inout [Posting]) {
        if let last = list.last, last.rowID >= posting.rowID {
            let index = lowerBound(posting.rowID, in: list)
            if index < list.count, list[index].rowID == posting.rowID {
                list[index] = posting
            } else {
                list.insert(posting, at: index)
            }
        } else {
            list.append(posting)
        }
    }

    private static func remove(_ rowID: UInt32, from list: inout [Posting]) {
        let index = lowerBound(rowID, in: list)
        if index < list.count, list[index].rowID == rowID { list.remove(at: index) }
    }

    /// Merging costs a pass over every term, so it waits for this many new ones.
    static let recentTermsLimit = 512

    /// Sorts the recent terms into `sortedTerms`, dropping terms whose list
    /// emptied (their keys go too, so a term that comes back is new again).
    private mutating func mergeRecentTerms() {
        recentTerms.sort(by: Self.precedes)
        var merged: [String] = []
        merged.reserveCapacity(sortedTerms.count + recentTerms.count)
        var i = 0, j = 0
        while i < sortedTerms.count || j < recentTerms.count {
            let term: String
            if j == recentTerms.count || (i < sortedTerms.count && Self.precedes(sortedTerms[i], recentTerms[j])) {
                term = sortedTerms[i]; i += 1
            } else {
                term = recentTerms[j]; j += 1
            }
            if postings[term]?.isEmpty == false { merged.append(term) } else { postings[term] = nil }
        }
        sortedTerms = merged
        recentTerms.removeAll(keepingCapacity: true)
    }

    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    // MARK: - Queries

    /// The indexed terms that start with `prefix` (itself included).
    func terms(withPrefix prefix: String) -> [String] {
        var low = 0, high = sortedTerms.count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(sortedTerms[middle], prefix) { low = middle + 1 } else { high = middle }
        }
        var found: [String] = []
        while low < sortedTerms.count, sortedTerms[low].utf8.starts(with: prefix.utf8) {
            found.append(sortedTerms[low])
            low += 1
        }
        for term in recentTerms where term.utf8.starts(with: prefix.utf8) { found.append(term) }
        return found
    }

    /// The newest `limit` unexpired entries that contain every word of
    /// `words` (the last one also as a prefix) and match the filters, with
    /// their hits per column, newest first.
    func candidates(words: [String], appID: String?, activityTypes: [String], now: Int64,
                    limit: Int) -> [(rowID: UInt32, document: Document, hits: Hits)] {
        guard let last = words.last, limit > 0 else { return [] }
        var groups: [Group] = []
        var exactTerms = Set<String>()
        for word in words.dropLast() where exactTerms.insert(word).inserted {
            guard let list = postings[word], !list.isEmpty else { return [] }
            groups.append(Group(lists: [list], counted: [true]))
        }
        let expansion = terms(withPrefix: last).compactMap { term -> (list: [Posting], counted: Bool)? in
            guard let list = postings[term], !list.isEmpty else { return nil }
            // A term that is also an exact word is counted once, there.
            return (list, !exactTerms.contains(term))
        }
        guard !expansion.isEmpty else { return [] }
        groups.append(Group(lists: expansion.map(\.list), counted: expansion.map(\.counted)))
        if let appID {
            guard let list = appPostings[appID] else { return [] }
            groups.append(Group(lists: [list], counted: [false]))
        }
        if !activityTypes.isEmpty {
            let lists = Set(activityTypes).compactMap { typePostings[$0] }
            guard !lists.isEmpty else { return [] }
            groups.append(Group(lists: lists, counted: Array(repeating: false, count: lists.count)))
        }

        let driverIndex = groups.indices.min { groups[$0].total < groups[$1].total }!
        let driver = groups.remove(at: driverIndex)
        for index in groups.indices { groups[index].prepareMembership(checks: driver.total) }

        var found: [(rowID: UInt32, document: Document, hits: Hits)] = []
        driver.forEachDescending { rowID, driverHits in
            var hits = driverHits
            for index in groups.indices {
                guard let groupHits = groups[index].hits(of: rowID) else { return true }
                hits.add(groupHits)
            }
            guard let document = documents[rowID], document.expiration == 0 || document.expiration > now else { return true }
            found.append((rowID, document, hits))
            return found.count < limit
        }
        return found
    }

    /// One query word (the last one: all its extensions), or a filter: an
    /// entry belongs to the group when it is in any of the lists.
    private struct Group {
        let lists: [[Posting]]
        /// Whether a list's counts go into the hits (filters and repeated terms do not).
        let counted: [Bool]
        let total: Int
        let anyCounted: Bool
        /// Built instead of searching each list when that is cheaper.
        private var merged: [UInt32: Hits]?

        init(lists: [[Posting]], counted: [Bool]) {
            self.lists = lists
            self.counted = counted
            self.total = lists.reduce(0) { $0 + $1.count }
            self.anyCounted = counted.contains(true)
            self.ends = lists.map(\.count)
        }

        /// Up to `checks` lookups will follow: a binary search in every list
        /// for each, or one pass over all the postings now.
        mutating func prepareMembership(checks: Int) {
            guard lists.count > 1 else { return }
            let probes = Double(checks) * Double(lists.count) * (log2(Double(total / lists.count + 1)) + 1)
            // A table insert costs a few probes' worth.
            guard 4 * Double(total) < probes else { return }
            var table: [UInt32: Hits] = [:]
            table.reserveCapacity(total)
            for (list, counted) in zip(lists, counted) {
                for posting in list {
                    var hits = Hits()
                    if counted { hits.add(posting) }
                    table[posting.rowID, default: Hits()].add(hits)
                }
            }
            merged = table
        }

        /// The entry's hits in this group, or nil when it is in none of the lists.
        ///
        /// Asked for ever smaller rowids (the driver walks newest first), so
        /// each list is searched backwards from where the last answer was,
        /// galloping: a few nearby cache lines instead of a fresh binary
        /// search through a list of 100 000.
        mutating func hits(of rowID: UInt32) -> Hits? {
            if let merged { return merged[rowID] }
            var hits = Hits()
            var member = false
            for index in lists.indices {
                let list = lists[index]
                let found = Self.lastIndex(notAbove: rowID, in: list, before: ends[index])
                ends[index] = found + 1
                guard found >= 0, list[found].rowID == rowID else { continue }
                member = true
                if counted[index] { hits.add(list[found]) } else if !anyCounted { break }
            }
            return member ? hits : nil
        }

        /// Where each list's next answer can be at most (exclusive).
        private var ends: [Int]

        /// The last position in `list[..<end]` whose rowid is at most
        /// `rowID`, or -1.
        static func lastIndex(notAbove rowID: UInt32, in list: [Posting], before end: Int) -> Int {
            // Invariant: list[low] ≤ rowID (or low = -1) and list[high] > rowID (or high = end).
            var high = end, low = end - 1, step = 1
            while low >= 0, list[low].rowID > rowID {
                high = low
                low -= step
                step *= 2
            }
            low = max(low, -1)
            while high - low > 1 {
                let middle = (low + high) / 2
                if list[middle].rowID <= rowID { low = middle } else { high = middle }
            }
            return low
        }

        /// Calls `body` with each entry of the union, newest first, until it returns false.
        func forEachDescending(_ body: (UInt32, Hits) -> Bool) {
            if lists.count == 1 {
                let list = lists[0]
                for posting in list.reversed() {
                    var hits = Hits()
                    if counted[0] { hits.add(posting) }
                    if !body(posting.rowID, hits) { return }
                }
                return
            }
            // A max-heap of one cursor per list, keyed by the rowid it points at.
            var heap = MergeHeap(lists: lists)
            while let rowID = heap.top {
                var hits = Hits()
                while heap.top == rowID {
                    let (list, posting) = heap.popTop()
                    if counted[list] { hits.add(posting) }
                }
                if !body(rowID, hits) { return }
            }
        }
    }

    /// The first index whose rowid is not below `rowID`.
    static func lowerBound(_ rowID: UInt32, in list: [Posting]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle].rowID < rowID { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension SearchIndex.Posting {
    mutating func count(column: Int) {
        switch column {
        case 0: title = title &+ (title == .max ? 0 : 1)
        case 1: keywords = keywords &+ (keywords == .max ? 0 : 1)
        default: description = description &+ (description == .max ? 0 : 1)
        }
    }
}

/// Cursors into several descending walks, the largest current rowid on top.
private struct MergeHeap {
    private let lists: [[SearchIndex.Posting]]
    /// (list, next position to read, counting down); heap-ordered by that posting's rowid.
    private var cursors: [(list: Int, position: Int)] = []

    init(lists: [[SearchIndex.Posting]]) {
        self.lists = lists
        cursors.reserveCapacity(lists.count)
        for (index, list) in lists.enumerated() where !list.isEmpty {
            cursors.append((index, list.count - 1))
        }
        for index in stride(from: cursors.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private func key(_ index: Int) -> UInt32 {
        let cursor = cursors[index]
        return lists[cursor.list][cursor.position].rowID
    }

    var top: UInt32? { cursors.isEmpty ? nil : key(0) }

    /// The top posting and its list; the cursor moves on (or leaves the heap).
    mutating func popTop() -> (list: Int, posting: SearchIndex.Posting) {
        let cursor = cursors[0]
        let posting = lists[cursor.list][cursor.position]
        if cursor.position > 0 {
            cursors[0].position -= 1
        } else {
            cursors[0] = cursors[cursors.count - 1]
            cursors.removeLast()
        }
        if !cursors.isEmpty { siftDown(0) }
        return (cursor.list, posting)
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < cursors.count else { return }
            var largest = left
            if left + 1 < cursors.count, key(left + 1) > key(left) { largest = left + 1 }
            guard key(largest) > key(parent) else { return }
            cursors.swapAt(parent, largest)
            parent = largest
        }
    }
}

// MARK: - Keeping the index in step with the database

extension SQLiteConnection {
    /// The columns ``indexedEntry(_:)`` reads, in order.
    static let indexedColumns =
        "id, title, keywords, content_description, app_id, activity_type, last_used, expiration, eligible_search"

    /// The row as the index sees it; nil when it is not search-eligible.
    static func indexedEntry(_ s: Statement) -> SearchIndex.Entry? {
        guard s.int64(8) != 0 else { return nil }
        return SearchIndex.Entry(rowID: s.int64(0), title: s.text(1), keywords: s.text(2), description: s.text(3),
                                 appID: s.text(4), activityType: s.text(5), lastUsed: s.int64(6), expiration: s.int64(7))
    }

    /// The search index, built first when there is none yet (it is built on
    /// the first search, not at open: a daemon started for one Donate never
    /// pays for it) or when another connection has written since.
    func withSearchIndex<T>(_ body: (SearchIndex) -> T) throws(StoreError) -> T {
        let version = try dataVersion()
        if searchIndex == nil || searchIndexDataVersion != version {
            searchIndex = nil
            let tokenizer = try ftsTokenizer()
            var index = SearchIndex()
            try withStatement("SELECT \(Self.indexedColumns) FROM entries WHERE eligible_search = 1 ORDER BY id") { statement throws(StoreError) in
                while try statement.step() {
                    if let entry = Self.indexedEntry(statement) { index.add(entry, tokenizer: tokenizer) }
                }
            }
            searchIndexDataVersion = version
            searchIndex = index
        }
        return body(searchIndex!)
    }

    private func dataVersion() throws(StoreError) -> Int64 {
        try withStatement("PRAGMA data_version") { statement throws(StoreError) in try statement.step() ? statement.int64(0) : 0 }
    }

    /// Called after COMMIT; a rolled-back transaction's changes are dropped instead.
    func applyPendingIndexChanges() {
        defer { pendingIndexChanges.removeAll() }
        guard searchIndex != nil, !pendingIndexChanges.isEmpty else { return }
        let rebuild = pendingIndexChanges.contains { if case .rebuild = $0 { true } else { false } }
        guard !rebuild, let tokenizer = try? ftsTokenizer() else {
            searchIndex = nil // the next search reads everything again
            return
        }
        for change in pendingIndexChanges {
            switch change {
            case .add(let entry): searchIndex!.add(entry, tokenizer: tokenizer)
            case .remove(let entry): searchIndex!.remove(entry, tokenizer: tokenizer)
            case .rebuild: break
            }
        }
    }
}
