// SPDX-License-Identifier: Apache-2.0
import CGLib

/// `text` made comparable regardless of case, accents and character width:
/// compatibility-decomposed (NFKD, so "ﬁ" and full-width letters become plain
/// ones), stripped of combining marks, case-folded, trimmed of surrounding
/// white space.
///
/// GLib's Unicode tables rather than Foundation's `folding(options:locale:)`,
/// because the daemon does not link ICU (it would double its resident size).
///
/// ```swift
/// foldedForComparison("  Crème BRÛLÉE ") == foldedForComparison("creme brulee")  // true
/// ```
public func foldedForComparison(_ text: String) -> String {
    guard let decomposed = g_utf8_normalize(text, -1, G_NORMALIZE_NFKD) else { return text }
    defer { g_free(decomposed) }
    var withoutMarks = String.UnicodeScalarView()
    for scalar in String(cString: decomposed).unicodeScalars {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .spacingMark: continue
        default: withoutMarks.append(scalar)
        }
    }
    let stripped = String(withoutMarks)
    guard let folded = g_utf8_casefold(stripped, -1) else { return stripped }
    defer { g_free(folded) }
    let result = String(cString: folded)
    return String(result.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
}
