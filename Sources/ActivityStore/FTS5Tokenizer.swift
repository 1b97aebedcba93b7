// SPDX-License-Identifier: Apache-2.0
import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// FTS5's own `unicode61 remove_diacritics 2` tokenizer, called directly.
///
/// Why: the term dictionary (see `Schema.version2`) must hold exactly the
/// tokens FTS5 indexes, and a query word must be folded exactly as FTS5 folds
/// it; a re-implementation in Swift would drift on accents and scripts.
final class FTS5Tokenizer {
    private let tokenizer: OpaquePointer
    private let delete: @convention(c) (OpaquePointer?) -> Void
    private let tokenize: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, Int32,
                                          (@convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, Int32, Int32, Int32) -> Int32)?) -> Int32

    /// SQLite keeps the pointer type it is given and compares it while the
    /// statement runs, so it must outlive the call to `sqlite3_bind_pointer`
    /// (a Swift string argument is a temporary copy: AddressSanitizer caught
    /// SQLite reading it after it was freed).
    nonisolated(unsafe) private static let pointerType: UnsafeMutablePointer<CChar> = strdup("fts5_api_ptr")!

    init(_ db: SQLiteConnection) throws(StoreError) {
        // Where fts5() writes the API pointer when the statement steps: it must
        // stay valid past the bind (a withUnsafeMutablePointer pointer does not).
        let slot = UnsafeMutablePointer<UnsafeMutablePointer<fts5_api>?>.allocate(capacity: 1)
        slot.initialize(to: nil)
        defer { slot.deallocate() }
        try db.withStatement("SELECT fts5(?1)") { statement throws(StoreError) in
            try db.check(sqlite3_bind_pointer(statement.handle, 1, slot, Self.pointerType, nil), "sqlite3_bind_pointer")
            _ = try statement.step()
        }
        guard let api = slot.pointee, let find = api.pointee.xFindTokenizer else {
            throw StoreError(function: "fts5(?1)", code: SQLITE_ERROR, message: "this SQLite has no FTS5 API")
        }
        var context: UnsafeMutableRawPointer?
        var methods = fts5_tokenizer()
        try db.check(find(api, "unicode61", &context, &methods), "fts5_api.xFindTokenizer")
        guard let create = methods.xCreate, let delete = methods.xDelete, let tokenize = methods.xTokenize else {
            throw StoreError(function: "fts5_api.xFindTokenizer", code: SQLITE_ERROR, message: "unicode61 has no methods")
        }
        var instance: OpaquePointer?
        let created = ["remove_diacritics", "2"].withCStrings { arguments in
            create(context, arguments, 2, &instance)
        }
        try db.check(created, "fts5_tokenizer.xCreate")
        guard let instance else {
            throw StoreError(function: "fts5_tokenizer.xCreate", code: SQLITE_ERROR, message: "no tokenizer")
        }
        self.tokenizer = instance
        self.delete = delete
        self.tokenize = tokenize
    }

    deinit { delete(tokenizer) }

    /// The tokens FTS5 would index for `text` (lowercased, diacritics removed).
    func tokens(_ text: String, forQuery: Bool = false) -> [String] {
        var collected: [String] = []
        var utf8 = Array(text.utf8)
        if utf8.isEmpty { return [] }
        withUnsafeMutablePointer(to: &collected) { sink in
            utf8.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { characters in
                    _ = tokenize(tokenizer, UnsafeMutableRawPointer(sink), forQuery ? FTS5_TOKENIZE_QUERY : FTS5_TOKENIZE_DOCUMENT,
                                 characters, Int32(buffer.count)) { context, _, token, length, _, _ in
                        guard let context, let token, length > 0 else { return SQLITE_OK }
                        let bytes = UnsafeRawBufferPointer(start: token, count: Int(length))
                        context.assumingMemoryBound(to: [String].self).pointee.append(String(decoding: bytes, as: UTF8.self))
                        return SQLITE_OK
                    }
                }
            }
        }
        return collected
    }
}

private extension Array where Element == String {
    /// Calls `body` with a C array of C strings that live for the call.
    func withCStrings<R>(_ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let duplicated = map { strdup($0) }
        defer { duplicated.forEach { free($0) } }
        var pointers = duplicated.map { UnsafePointer($0) }
        return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
    }
}
