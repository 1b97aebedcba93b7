// SPDX-License-Identifier: Apache-2.0

/// Turns user text into an FTS5 MATCH expression with the contract's
/// semantics: any text is valid, every word must match, only the last word
/// also matches as a prefix, FTS5 operators are plain words.
enum SearchQuery {
    /// Words beyond this are ignored (a pasted page must not make one query
    /// cost seconds for everyone else on the bus).
    static let maximumWords = 64

    /// Whether a scalar can start a word the way FTS5 `unicode61` sees it
    /// (its default categories `L* N* Co`).
    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let v = scalar.value
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A)
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .decimalNumber, .letterNumber, .otherNumber, .privateUse:
            return true
        default:
            return false
        }
    }

    /// Whether a scalar continues a word: also combining marks, which
    /// `unicode61` keeps inside a token (and strips as diacritics) so that a
    /// decomposed `é` does not split a word. Erring on the side of joining
    /// is harmless: FTS5 re-tokenizes each quoted word, and a quoted word
    /// it splits becomes a phrase of adjacent tokens, which is what the text
    /// contains.
    static func continuesWord(_ scalar: Unicode.Scalar) -> Bool {
        if isWordScalar(scalar) { return true }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// The words of `text`, lowercased, in order.
    static func words(in text: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if current.isEmpty ? isWordScalar(scalar) : continuesWord(scalar) {
                current.append(scalar)
            } else if !current.isEmpty {
                words.append(String(current).lowercased())
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { words.append(String(current).lowercased()) }
        return words
    }

    /// Counts words without building them (for column lengths in scoring).
    static func wordCount(in text: String) -> Int {
        var count = 0
        var inWord = false
        for scalar in text.unicodeScalars {
            if inWord {
                inWord = continuesWord(scalar)
            } else if isWordScalar(scalar) {
                inWord = true
                count += 1
            }
        }
        return count
    }

    /// `"word"` with `"` doubled: inside a string FTS5 has no operators.
    static func quoted(_ s: String) -> String {
        "\"" + s.replacingAll("\"", with: "\"\"") + "\""
    }

    /// The scope token that `entries.scope` holds for an app or a type.
    static func scopeToken(_ prefix: String, _ value: String) -> String {
        let digits: [Character] = Array("0123456789ABCDEF")
        var token = prefix
        token.reserveCapacity(prefix.count + value.utf8.count * 2)
        for byte in value.utf8 {
            token.append(digits[Int(byte >> 4)])
            token.append(digits[Int(byte & 0xF)])
        }
        return token
    }

    /// The MATCH expression, or `nil` when the text has no words.
    ///
    /// `-scope : ("w1" "w2" "last"*)` matches the words in the text columns
    /// only (never the hidden scope tokens); the implicit AND also drops a
    /// word that FTS5's tokenizer turns into nothing instead of failing.
    /// App and type filters are further ANDed phrases on the scope column.
    ///
    /// `lastWordTerms`, when given, are the exact indexed terms that start
    /// with the last word; they replace its prefix query (same matches).
    static func matchExpression(for text: String, appID: String?, activityTypes: [String],
                                lastWordTerms: [String]? = nil) -> String? {
        let words = Array(words(in: text).prefix(maximumWords))
        guard !words.isEmpty else { return nil }
        var parts = words.map(quoted)
        if let terms = lastWordTerms, !terms.isEmpty {
            // FTS5 wants an explicit AND before a parenthesized group.
            let group = "(" + terms.map(quoted).joined(separator: " OR ") + ")"
            parts[parts.count - 1] = parts.count > 1 ? "AND " + group : group
        } else {
            parts[parts.count - 1] += "*"
        }
        var expression = "-scope : (" + parts.joined(separator: " ") + ")"
        if let appID {
            expression += " AND scope : " + quoted(scopeToken("A", appID))
        }
        if !activityTypes.isEmpty {
            let types = Set(activityTypes).sorted().map { quoted(scopeToken("T", $0)) }
            expression += " AND scope : (" + types.joined(separator: " OR ") + ")"
        }
        return expression
    }
}

extension String {
    /// Replaces every occurrence of one scalar (no Foundation here). Works on
    /// scalars, not Characters, so a quote followed by a combining mark is
    /// still found.
    func replacingAll(_ target: Unicode.Scalar, with replacement: String) -> String {
        guard unicodeScalars.contains(target) else { return self }
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == target { result.append(contentsOf: replacement.unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }
}
