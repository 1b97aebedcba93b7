// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite

/// The full-text index that answers Search: every term's postings in
/// memory, built from the database on the first search and changed after
/// every commit that touches a searchable entry.
///
/// Why not FTS5's own query: at 100 000 entries a rare two-word FTS5 query
/// with `highlight()` spent ~120 µs in SQLite with cold caches, and a prefix
/// whose terms are spread over many entries (`everywhere kalo`: 200 terms,
/// 5 000 entries) 1.7 ms, merging every term's doclist from every segment.
/// Here both are a few binary searches and a merge of small arrays, and
/// ranking needs no text: each posting says which fields hold the term.
///
/// Layout, for memory: most postings live in one array, grouped by term in
/// byte order ("frozen"), 4 bytes each, with the terms in one byte buffer;
/// entries indexed since live in small per-term arrays ("recent"), and
/// entries removed since are only marked stale. When the recent or stale
/// postings grow past an eighth of the frozen ones, the two are merged into
/// a new frozen array (~32 ms at 100 000 entries). One Swift array per term
/// and 8-byte postings instead took 40 MiB at 100 000 bench entries (120 000
/// terms, most of them in one entry); this layout ~16 MiB.
///
/// Entries are identified by rowid, which is last-use order (see
/// `Schema.version1`), so the newest matches are at the end of every list.
struct SearchIndex {
    /// One entry in one term's list: its rowid and the columns that hold
    /// the term, in 4 bytes (rowid << 3 | description << 2 | keywords << 1 | title).
    struct Posting {
        private(set) var packed: UInt32

        init(rowID: UInt32) { packed = rowID << 3 }

        var rowID: UInt32 { packed >> 3 }

        mutating func mark(column: Int) { packed |= 1 << UInt32(column) }
    }

    /// The largest rowid a posting holds (29 bits; the store renumbers
    /// before it gets there, see `ActivityStore.nextRowID`).
    static let maximumRowID = Int64(UInt32.max >> 3)

    /// What ranking needs of an entry besides its postings.
    struct Document {
        var lastUsed: Int64
        var titleLength: UInt16
        var keywordsLength: UInt16
        var descriptionLength: UInt16
        /// Whether `expirations` holds a date for it (most entries never expire).
        var expires: Bool
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

    /// Hits per column of a candidate: how many of the query's distinct terms it holds.
    struct Hits {
        var title = 0
        var keywords = 0
        var description = 0

        mutating func add(_ posting: Posting) {
            title += Int(posting.packed & 1)
            keywords += Int(posting.packed >> 1 & 1)
            description += Int(posting.packed >> 2 & 1)
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

    /// Documents as of the last merge, by rowid (two sorted arrays: a
    /// dictionary of 100 000 would take 5 MiB), and those indexed since.
    private var frozenDocumentRowIDs: [UInt32] = []
    private var frozenDocuments: [Document] = []
    private var recentDocuments: [UInt32: Document] = [:]
    private(set) var documentCount = 0
    private var expirations: [UInt32: Int64] = [:]
    private var frozen = FrozenPostings()
    /// Entries whose frozen postings no longer count: removed, or indexed
    /// again (into `recent`) since the last merge.
    private var staleRowIDs = Set<UInt32>()
    private var stalePostingCount = 0
    /// Postings of the entries indexed since the last merge.
    private var recent: [String: [Posting]] = [:]
    private var recentPostingCount = 0
    /// `recent`'s terms in byte order, and those added since that was sorted.
    private var recentSortedTerms: [String] = []
    private var recentNewTerms: [String] = []
    private var appPostings: [String: [Posting]] = [:]
    private var typePostings: [String: [Posting]] = [:]

    /// Recent (or stale) postings are merged into the frozen array when they
    /// pass this share of it: a merge copies every posting, so rarely, but
    /// recent ones cost a small array each.
    var mergeDivisor = 8
    /// Below this many, recent and stale postings never trigger a merge.
    var minimumMergeThreshold = SearchIndex.defaultMinimumMerge
    /// The merge threshold an index starts with.
    static let defaultMinimumMerge = 4096
    /// Set while the index is filled from the database, before any query.
    var isBuilding = false

    // MARK: - Changes

    mutating func add(_ entry: Entry, tokenizer: FTS5Tokenizer) {
        // The store keeps rowids within range (see `ActivityStore.nextRowID`).
        guard entry.rowID > 0, entry.rowID <= Self.maximumRowID else { preconditionFailure("rowid \(entry.rowID) beyond the index") }
        let rowID = UInt32(entry.rowID)
        let columns = [tokenizer.tokens(entry.title), tokenizer.tokens(entry.keywords), tokenizer.tokens(entry.description)]
        // An entry has a few dozen tokens: a linear search beats hashing each.
        var terms: [(term: String, posting: Posting)] = []
        terms.reserveCapacity(columns[0].count + columns[1].count + columns[2].count)
        for (column, tokens) in columns.enumerated() {
            for token in tokens {
                if let index = terms.firstIndex(where: { $0.term == token }) {
                    terms[index].posting.mark(column: column)
                } else {
                    var posting = Posting(rowID: rowID)
                    posting.mark(column: column)
                    terms.append((token, posting))
                }
            }
        }
        for (term, posting) in terms {
            if let index = recent.index(forKey: term) {
                Self.insert(posting, into: &recent.values[index])
            } else {
                recent[term] = [posting]
                recentNewTerms.append(term)
            }
        }
        recentPostingCount += terms.count
        let scope = Posting(rowID: rowID)
        Self.insert(scope, into: &appPostings[entry.appID, default: []])
        Self.insert(scope, into: &typePostings[entry.activityType, default: []])
        recentDocuments[rowID] = Document(
            lastUsed: entry.lastUsed,
            titleLength: UInt16(clamping: columns[0].count), keywordsLength: UInt16(clamping: columns[1].count),
            descriptionLength: UInt16(clamping: columns[2].count), expires: entry.expiration != 0)
        documentCount += 1
        expirations[rowID] = entry.expiration != 0 ? entry.expiration : nil
        // Sorting copies every recent term, so it waits for more new ones as
        // there are more (a prefix query scans the unsorted ones); while
        // building, nothing is queried and the final merge sorts them all.
        if !isBuilding, recentNewTerms.count > max(32, Int(Double(recentSortedTerms.count).squareRoot())) { sortNewTerms() }
        mergeIfWorthIt()
    }

    /// Removes an entry as it was indexed (`entry` holds its old fields).
    mutating func remove(_ entry: Entry, tokenizer: FTS5Tokenizer) {
        guard let rowID = UInt32(exactly: entry.rowID) else { return }
        let isRecent = recentDocuments.removeValue(forKey: rowID) != nil
        guard isRecent || (!staleRowIDs.contains(rowID) && frozenDocumentIndex(of: rowID) != nil) else { return }
        documentCount -= 1
        expirations[rowID] = nil
        var terms = Set<String>()
        for text in [entry.title, entry.keywords, entry.description] { terms.formUnion(tokenizer.tokens(text)) }
        if isRecent {
            for term in terms where Self.remove(rowID, from: &recent[term, default: []]) { recentPostingCount -= 1 }
        } else {
            staleRowIDs.insert(rowID)
            stalePostingCount += terms.count
        }
        Self.remove(rowID, from: &appPostings[entry.appID, default: []])
        if appPostings[entry.appID]?.isEmpty == true { appPostings[entry.appID] = nil }
        Self.remove(rowID, from: &typePostings[entry.activityType, default: []])
        if typePostings[entry.activityType]?.isEmpty == true { typePostings[entry.activityType] = nil }
        mergeIfWorthIt()
    }

    /// New rowids are the largest, so this is an append but for re-indexing.
    private static func insert(_ posting: Posting, into list: inout [Posting]) {
        if let last = list.last, last.rowID >= posting.rowID {
            let index = lowerBound(posting.rowID, in: list[...])
            if index < list.count, list[index].rowID == posting.rowID {
                list[index] = posting
            } else {
                list.insert(posting, at: index)
            }
        } else {
            list.append(posting)
        }
    }

    @discardableResult
    private static func remove(_ rowID: UInt32, from list: inout [Posting]) -> Bool {
        let index = lowerBound(rowID, in: list[...])
        guard index < list.count, list[index].rowID == rowID else { return false }
        list.remove(at: index)
        return true
    }

    private mutating func sortNewTerms() {
        recentNewTerms.sort(by: Self.precedes)
        var merged: [String] = []
        merged.reserveCapacity(recentSortedTerms.count + recentNewTerms.count)
        var i = 0, j = 0
        while i < recentSortedTerms.count || j < recentNewTerms.count {
            if j == recentNewTerms.count || (i < recentSortedTerms.count && Self.precedes(recentSortedTerms[i], recentNewTerms[j])) {
                merged.append(recentSortedTerms[i]); i += 1
            } else {
                merged.append(recentNewTerms[j]); j += 1
            }
        }
        recentSortedTerms = merged
        recentNewTerms.removeAll(keepingCapacity: true)
    }

    private mutating func mergeIfWorthIt() {
        let threshold = max(minimumMergeThreshold, frozen.postings.count / mergeDivisor)
        if recentPostingCount > threshold || stalePostingCount > threshold { merge() }
    }

    /// Writes the frozen array again with the recent postings in and the
    /// stale ones out.
    mutating func merge() {
        sortNewTerms()
        var next = FrozenPostings()
        next.postings.reserveCapacity(frozen.postings.count - stalePostingCount + recentPostingCount)
        next.reserveTerms(frozen.termCount + recentSortedTerms.count,
                          bytes: frozen.termBytes.count + recentSortedTerms.reduce(0) { $0 + $1.utf8.count })
        let stale = staleRowIDs
        var frozenIndex = 0, recentIndex = 0
        while frozenIndex < frozen.termCount || recentIndex < recentSortedTerms.count {
            let order: Int
            if frozenIndex == frozen.termCount { order = 1 }
            else if recentIndex == recentSortedTerms.count { order = -1 }
            else { order = frozen.compare(term: frozenIndex, with: recentSortedTerms[recentIndex]) }
            var old: ArraySlice<Posting> = []
            var new: ArraySlice<Posting> = []
            var termBytes: ArraySlice<UInt8>
            if order <= 0 {
                old = frozen.postings(of: frozenIndex)
                termBytes = frozen.termBytes[frozen.termRange(frozenIndex)]
                frozenIndex += 1
            } else {
                termBytes = ArraySlice(recentSortedTerms[recentIndex].utf8)
            }
            if order >= 0 {
                new = recent[recentSortedTerms[recentIndex]]?[...] ?? []
                if order > 0 { termBytes = ArraySlice(recentSortedTerms[recentIndex].utf8) }
                recentIndex += 1
            }
            // Both runs ascend; a rowid in both is stale in the old one.
            let before = next.postings.count
            var o = old.startIndex, n = new.startIndex
            while o < old.endIndex || n < new.endIndex {
                if n == new.endIndex || (o < old.endIndex && old[o].rowID < new[n].rowID) {
                    if stale.isEmpty || !stale.contains(old[o].rowID) { next.postings.append(old[o]) }
                    o += 1
                } else {
                    next.postings.append(new[n])
                    n += 1
                }
            }
            if next.postings.count > before { next.append(term: termBytes, postingsEnd: next.postings.count) }
        }
        frozen = next
        mergeDocuments(stale: stale)
        recent = [:]
        recentSortedTerms = []
        recentNewTerms = []
        recentPostingCount = 0
        staleRowIDs = []
        stalePostingCount = 0
        // The old arrays went back to malloc; give their pages back to the system.
        activitystore_release_free_memory()
    }

    private mutating func mergeDocuments(stale: Set<UInt32>) {
        let added = recentDocuments.sorted { $0.key < $1.key }
        var rowIDs: [UInt32] = [], documents: [Document] = []
        rowIDs.reserveCapacity(documentCount)
        documents.reserveCapacity(documentCount)
        var old = 0, new = 0
        while old < frozenDocumentRowIDs.count || new < added.count {
            if new == added.count || (old < frozenDocumentRowIDs.count && frozenDocumentRowIDs[old] < added[new].key) {
                if stale.isEmpty || !stale.contains(frozenDocumentRowIDs[old]) {
                    rowIDs.append(frozenDocumentRowIDs[old])
                    documents.append(frozenDocuments[old])
                }
                old += 1
            } else {
                // A rowid in both is stale in the old array.
                if old < frozenDocumentRowIDs.count, frozenDocumentRowIDs[old] == added[new].key { old += 1 }
                rowIDs.append(added[new].key)
                documents.append(added[new].value)
                new += 1
            }
        }
        frozenDocumentRowIDs = rowIDs
        frozenDocuments = documents
        recentDocuments = [:]
    }

    private func frozenDocumentIndex(of rowID: UInt32, before end: Int? = nil) -> Int? {
        let found = Self.lastIndex(notAbove: rowID, in: frozenDocumentRowIDs[...], before: end ?? frozenDocumentRowIDs.count)
        return found >= 0 && frozenDocumentRowIDs[found] == rowID ? found : nil
    }

    /// UTF-8 byte order, with memcmp (the generic comparison of two UTF-8
    /// views was the largest cost of building the index).
    static func precedes(_ a: String, _ b: String) -> Bool {
        let order = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Bool in
                let common = min(x.count, y.count)
                if common > 0 {
                    let difference = memcmp(x.baseAddress!, y.baseAddress!, common)
                    if difference != 0 { return difference < 0 }
                }
                return x.count < y.count
            }
        }
        return (order ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    // MARK: - Queries

    /// The newest `limit` unexpired entries that contain every word of
    /// `words` (the last one also as a prefix) and match the filters, with
    /// their hits per column, newest first.
    func candidates(words: [String], appID: String?, activityTypes: [String], now: Int64,
                    limit: Int) -> [(rowID: UInt32, document: Document, hits: Hits)] {
        guard let last = words.last, limit > 0 else { return [] }
        var groups: [Group] = []
        var exactTerms: [String] = []
        for word in words.dropLast() where !exactTerms.contains(word) {
            exactTerms.append(word)
            var group = Group()
            if let index = frozen.index(of: word) { group.add(frozen.postings(of: index), isFrozen: true, counted: true) }
            if let list = recent[word], !list.isEmpty { group.add(list[...], isFrozen: false, counted: true) }
            guard group.total > 0 else { return [] }
            groups.append(group)
        }
        // The last word: every term it begins. A term that is also an exact
        // word is counted once, there.
        var expansion = Group()
        for index in frozen.indices(withPrefix: last) {
            expansion.add(frozen.postings(of: index), isFrozen: true,
                          counted: !exactTerms.contains { frozen.compare(term: index, with: $0) == 0 })
        }
        for term in recentTerms(withPrefix: last) {
            if let list = recent[term], !list.isEmpty {
                expansion.add(list[...], isFrozen: false, counted: !exactTerms.contains(term))
            }
        }
        guard expansion.total > 0 else { return [] }
        groups.append(expansion)
        if let appID {
            guard let list = appPostings[appID] else { return [] }
            var group = Group()
            group.add(list[...], isFrozen: false, counted: false)
            groups.append(group)
        }
        if !activityTypes.isEmpty {
            var group = Group()
            for type in Set(activityTypes) {
                if let list = typePostings[type] { group.add(list[...], isFrozen: false, counted: false) }
            }
            guard group.total > 0 else { return [] }
            groups.append(group)
        }

        let stale = staleRowIDs
        let frozenCounts = { (rowID: UInt32) in stale.isEmpty || !stale.contains(rowID) }
        let driverIndex = groups.indices.min { groups[$0].total < groups[$1].total }!
        let driver = groups.remove(at: driverIndex)
        for index in groups.indices { groups[index].prepareMembership(checks: driver.total, frozenCounts: frozenCounts) }

        var found: [(rowID: UInt32, document: Document, hits: Hits)] = []
        var frozenDocumentEnd = frozenDocumentRowIDs.count
        driver.forEachDescending(frozenCounts: frozenCounts) { rowID, driverHits in
            let frozenValid = frozenCounts(rowID)
            var hits = driverHits
            for index in groups.indices {
                guard let groupHits = groups[index].hits(of: rowID, frozenValid: frozenValid) else { return true }
                hits.add(groupHits)
            }
            let document: Document
            if let recentDocument = recentDocuments[rowID] {
                document = recentDocument
            } else {
                // Candidates come newest first: gallop back from the last one.
                let index = Self.lastIndex(notAbove: rowID, in: frozenDocumentRowIDs[...], before: frozenDocumentEnd)
                frozenDocumentEnd = index + 1
                guard index >= 0, frozenDocumentRowIDs[index] == rowID, frozenValid else { return true }
                document = frozenDocuments[index]
            }
            if document.expires, let expiration = expirations[rowID], expiration <= now { return true }
            found.append((rowID, document, hits))
            return found.count < limit
        }
        return found
    }

    private func recentTerms(withPrefix prefix: String) -> [String] {
        var low = firstIndex(in: recentSortedTerms.indices) { !Self.precedes(recentSortedTerms[$0], prefix) }
        var found: [String] = []
        while low < recentSortedTerms.count, recentSortedTerms[low].hasUTF8Prefix(prefix) {
            found.append(recentSortedTerms[low])
            low += 1
        }
        for term in recentNewTerms where term.hasUTF8Prefix(prefix) { found.append(term) }
        return found
    }

    /// One query word (the last one: all its extensions), or a filter: an
    /// entry belongs to the group when it is in any of the lists.
    private struct Group {
        private(set) var lists: [ArraySlice<Posting>] = []
        /// Frozen lists may hold stale postings (see `staleRowIDs`).
        private(set) var isFrozen: [Bool] = []
        /// Whether a list's counts go into the hits (filters and repeated terms do not).
        private(set) var counted: [Bool] = []
        private(set) var total = 0
        private var anyCounted = false
        /// Where each list's next answer can be at most (exclusive).
        private var ends: [Int] = []
        /// Built instead of searching each list when that is cheaper.
        private var merged: [UInt32: Hits]?

        mutating func add(_ list: ArraySlice<Posting>, isFrozen: Bool, counted: Bool) {
            guard !list.isEmpty else { return }
            lists.append(list)
            self.isFrozen.append(isFrozen)
            self.counted.append(counted)
            total += list.count
            anyCounted = anyCounted || counted
            ends.append(list.endIndex)
        }

        /// Up to `checks` lookups will follow: a search in every list for
        /// each, or one pass over all the postings now.
        mutating func prepareMembership(checks: Int, frozenCounts: (UInt32) -> Bool) {
            guard lists.count > 1 else { return }
            let probes = Double(checks) * Double(lists.count) * (log2(Double(total / lists.count + 1)) + 1)
            // A table insert costs a few probes' worth.
            guard 4 * Double(total) < probes else { return }
            var table: [UInt32: Hits] = [:]
            table.reserveCapacity(total)
            for index in lists.indices {
                for posting in lists[index] where !isFrozen[index] || frozenCounts(posting.rowID) {
                    var hits = Hits()
                    if counted[index] { hits.add(posting) }
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
        mutating func hits(of rowID: UInt32, frozenValid: Bool) -> Hits? {
            if let merged { return merged[rowID] }
            var hits = Hits()
            var member = false
            for index in lists.indices where frozenValid || !isFrozen[index] {
                let list = lists[index]
                let found = SearchIndex.lastIndex(notAbove: rowID, in: list, before: ends[index])
                ends[index] = found + 1
                guard found >= list.startIndex, list[found].rowID == rowID else { continue }
                member = true
                if counted[index] { hits.add(list[found]) } else if !anyCounted { break }
            }
            return member ? hits : nil
        }


        /// Calls `body` with each entry of the union, newest first, until it
        /// returns false; postings of stale entries do not count.
        func forEachDescending(frozenCounts: (UInt32) -> Bool, _ body: (UInt32, Hits) -> Bool) {
            if lists.count == 1 {
                for posting in lists[0].reversed() where !isFrozen[0] || frozenCounts(posting.rowID) {
                    var hits = Hits()
                    if counted[0] { hits.add(posting) }
                    if !body(posting.rowID, hits) { return }
                }
                return
            }
            // A max-heap of one cursor per list, keyed by the rowid it points at.
            var heap = MergeHeap(lists: lists)
            while let rowID = heap.top {
                let valid = frozenCounts(rowID)
                var hits = Hits()
                var member = false
                while heap.top == rowID {
                    let (list, posting) = heap.popTop()
                    guard valid || !isFrozen[list] else { continue }
                    member = true
                    if counted[list] { hits.add(posting) }
                }
                if member, !body(rowID, hits) { return }
            }
        }
    }

    /// The last position in `list[..<end]` whose rowid is at most `rowID`,
    /// or `list.startIndex - 1`, searched backwards from `end`, galloping:
    /// callers ask for ever smaller rowids, so the answer is usually near.
    static func lastIndex<List: RandomAccessCollection>(notAbove rowID: UInt32, in list: List, before end: Int) -> Int
        where List.Index == Int, List.Element: HasRowID {
        // Invariant: list[low] ≤ rowID (or low = start - 1) and list[high] > rowID (or high = end).
        let start = list.startIndex
        var high = end, low = end - 1, step = 1
        while low >= start, list[low].rowID > rowID {
            high = low
            low -= step
            step *= 2
        }
        low = max(low, start - 1)
        while high - low > 1 {
            let middle = (low + high) / 2
            if list[middle].rowID <= rowID { low = middle } else { high = middle }
        }
        return low
    }

    /// The first index whose rowid is not below `rowID`.
    static func lowerBound(_ rowID: UInt32, in list: ArraySlice<Posting>) -> Int {
        firstIndex(in: list.indices) { list[$0].rowID >= rowID }
    }
}

extension String {
    /// Whether the UTF-8 bytes start with `prefix`'s (no Unicode equivalence: index terms are bytes).
    func hasUTF8Prefix(_ prefix: String) -> Bool {
        var mine = self, theirs = prefix
        return mine.withUTF8 { a in
            theirs.withUTF8 { b in
                a.count >= b.count && (b.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, b.count) == 0)
            }
        }
    }
}

/// The first index of `range` where `isAtOrPast` holds, when it holds for
/// every index after that one too (a binary search; `range.upperBound` when
/// it holds nowhere).
func firstIndex(in range: Range<Int>, where isAtOrPast: (Int) -> Bool) -> Int {
    var low = range.lowerBound, high = range.upperBound
    while low < high {
        let middle = (low + high) / 2
        if isAtOrPast(middle) { high = middle } else { low = middle + 1 }
    }
    return low
}

/// Anything sorted by rowid that ``SearchIndex/lastIndex(notAbove:in:before:)`` can search.
protocol HasRowID {
    var rowID: UInt32 { get }
}

extension SearchIndex.Posting: HasRowID {}

extension UInt32: HasRowID {
    var rowID: UInt32 { self }
}


/// Every term's postings in three flat arrays, terms in byte order: what
/// the index holds between merges.
struct FrozenPostings {
    private(set) var termBytes: [UInt8] = []
    /// Term `i` is `termBytes[termEnds[i - 1]..<termEnds[i]]` (from 0 for the first).
    private var termEnds: [UInt32] = []
    /// Its postings are `postings[postingEnds[i - 1]..<postingEnds[i]]`.
    private var postingEnds: [UInt32] = []
    var postings: [SearchIndex.Posting] = []

    var termCount: Int { termEnds.count }

    mutating func reserveTerms(_ count: Int, bytes: Int) {
        termEnds.reserveCapacity(count)
        postingEnds.reserveCapacity(count)
        termBytes.reserveCapacity(bytes)
    }

    /// Adds the next term (in order) whose postings end at `postingsEnd`.
    mutating func append(term: ArraySlice<UInt8>, postingsEnd: Int) {
        termBytes.append(contentsOf: term)
        termEnds.append(UInt32(termBytes.count))
        postingEnds.append(UInt32(postingsEnd))
    }

    func termRange(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : Int(termEnds[index - 1]))..<Int(termEnds[index])
    }

    func postings(of index: Int) -> ArraySlice<SearchIndex.Posting> {
        postings[(index == 0 ? 0 : Int(postingEnds[index - 1]))..<Int(postingEnds[index])]
    }

    /// Byte order of term `index` against `other`: negative, 0 or positive.
    func compare(term index: Int, with other: String) -> Int {
        var other = other
        return other.withUTF8 { theirs in
            termBytes.withUnsafeBufferPointer { compare(term: index, in: $0, with: theirs) }
        }
    }

    private func compare(term index: Int, in all: UnsafeBufferPointer<UInt8>, with theirs: UnsafeBufferPointer<UInt8>) -> Int {
        let mine = UnsafeBufferPointer(rebasing: all[termRange(index)])
        let common = min(mine.count, theirs.count)
        if common > 0, let a = mine.baseAddress, let b = theirs.baseAddress {
            let order = memcmp(a, b, common)
            if order != 0 { return Int(order) }
        }
        return mine.count - theirs.count
    }

    /// The first term not below `word` in byte order.
    private func lowerBound(_ word: UnsafeBufferPointer<UInt8>, in all: UnsafeBufferPointer<UInt8>) -> Int {
        firstIndex(in: 0..<termCount) { compare(term: $0, in: all, with: word) >= 0 }
    }

    func index(of term: String) -> Int? {
        var term = term
        return term.withUTF8 { word in
            termBytes.withUnsafeBufferPointer { all in
                let index = lowerBound(word, in: all)
                return index < termCount && compare(term: index, in: all, with: word) == 0 ? index : nil
            }
        }
    }

    /// The terms that start with `prefix`: consecutive in byte order.
    func indices(withPrefix prefix: String) -> Range<Int> {
        var prefix = prefix
        return prefix.withUTF8 { word in
            termBytes.withUnsafeBufferPointer { all in
                let start = lowerBound(word, in: all)
                var end = start
                while end < termCount {
                    let range = termRange(end)
                    guard range.count >= word.count,
                          word.isEmpty || memcmp(all.baseAddress! + range.lowerBound, word.baseAddress!, word.count) == 0
                    else { break }
                    end += 1
                }
                return start..<end
            }
        }
    }
}

/// Cursors into several descending walks, the largest current rowid on top.
private struct MergeHeap {
    private let lists: [ArraySlice<SearchIndex.Posting>]
    /// (list, next position to read, counting down); heap-ordered by that posting's rowid.
    private var cursors: [(list: Int, position: Int)] = []

    init(lists: [ArraySlice<SearchIndex.Posting>]) {
        self.lists = lists
        cursors.reserveCapacity(lists.count)
        for (index, list) in lists.enumerated() where !list.isEmpty {
            cursors.append((index, list.endIndex - 1))
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
        if cursor.position > lists[cursor.list].startIndex {
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
    /// `body` gets the index in place (`inout`): passed by value, reading it
    /// from this class copied it, a retain and release of each of its arrays.
    func withSearchIndex<T>(_ body: (inout SearchIndex) -> T) throws(StoreError) -> T {
        try refreshSearchIndex()
        return body(&searchIndex!)
    }

    /// Asks the database whether another connection has written since the
    /// index was built, and builds it again if so (or if there is none).
    /// Returns true when the index in memory already matched the file.
    @discardableResult
    func refreshSearchIndex() throws(StoreError) -> Bool {
        let version = try dataVersion()
        // Read right after the statement above, so it describes the same snapshot.
        let fileVersion = fileDataVersion()
        if searchIndex != nil && searchIndexDataVersion == version {
            searchIndexFileVersion = fileVersion
            return true
        }
        searchIndex = nil
        let tokenizer = try ftsTokenizer()
        var index = SearchIndex()
        index.minimumMergeThreshold = searchIndexMinimumMerge
        // Fewer, larger merges while everything is new.
        index.mergeDivisor = 2
        index.isBuilding = true
        try withStatement("SELECT \(Self.indexedColumns) FROM entries WHERE eligible_search = 1 ORDER BY id") { statement throws(StoreError) in
            while try statement.step() {
                if let entry = Self.indexedEntry(statement) { index.add(entry, tokenizer: tokenizer) }
            }
        }
        index.merge()
        index.mergeDivisor = 8
        index.isBuilding = false
        searchIndexDataVersion = version
        searchIndex = index
        // Another connection that committed between the two reads left the
        // index ahead of `version`: vouch for no file version then.
        searchIndexFileVersion = fileDataVersion() == fileVersion ? fileVersion : nil
        return false
    }

    /// Runs `body` with the index without asking the database first, when
    /// nothing this connection has read or written since the index last
    /// matched the file changed it; nil otherwise. Whoever uses the answer
    /// must read from the database afterwards and then confirm with
    /// ``fileUnchangedSinceIndexMatched``: another connection may have
    /// committed since this connection's last read.
    ///
    /// Why: the `PRAGMA data_version` of ``withSearchIndex(_:)`` is a
    /// statement with a read transaction of its own (a WAL read lock taken and
    /// dropped), about a tenth of a rare query's time in the daemon; a query
    /// that loads its results takes that read transaction anyway.
    func withSearchIndexIfUnchanged<T>(_ body: (inout SearchIndex) -> T) -> T? {
        guard searchIndex != nil, fileUnchangedSinceIndexMatched else { return nil }
        return body(&searchIndex!)
    }

    /// The file's data version is the one the index was last known to match.
    /// SQLite brings it up to date when a read transaction starts and counts
    /// this connection's own commits too, so after a read it tells whether
    /// anything at all changed since.
    var fileUnchangedSinceIndexMatched: Bool {
        guard let known = searchIndexFileVersion else { return false }
        return fileDataVersion() == known
    }

    /// A statement, not `SQLITE_FCNTL_DATA_VERSION`: that one is only
    /// brought up to date when a read transaction starts.
    private func dataVersion() throws(StoreError) -> Int64 {
        #if DEBUG
        dataVersionQueries += 1
        #endif
        return try withStatement("PRAGMA data_version") { statement throws(StoreError) in try statement.step() ? statement.int64(0) : 0 }
    }

    /// `SQLITE_FCNTL_DATA_VERSION` of the main database: it changes with every
    /// commit, this connection's or another's, as of this connection's latest
    /// read transaction; nil when the VFS does not report it.
    func fileDataVersion() -> UInt32? {
        var version: UInt32 = 0
        return sqlite3_file_control(handle, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK ? version : nil
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
