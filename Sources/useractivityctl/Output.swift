// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

/// Writing results: tables for people, JSON for scripts. Every write is
/// flushed, because `monitor` and `become-current` run long behind pipes.
enum Output {
    static func line(_ text: String = "") {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Pretty-printed JSON with sorted keys (stable output for diffs and tests).
    static func json(_ value: Any) throws {
        let data = try JSONSerialization.data(withJSONObject: value,
                                              options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        line(String(decoding: data, as: UTF8.self))
    }

    /// One compact JSON object per line (JSON Lines), for streams.
    static func jsonLine(_ value: Any) throws {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
        line(String(decoding: data, as: UTF8.self))
    }

    /// Columns padded to their widest cell, two spaces apart; the last column is not padded.
    static func table(_ headers: [String], _ rows: [[String]]) {
        let all = [headers] + rows
        var widths = Array(repeating: 0, count: headers.count)
        for row in all {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        for row in all {
            var text = ""
            for (index, cell) in row.enumerated() {
                let isLast = index == row.count - 1
                text += isLast ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
            }
            line(trimmingTrailingSpaces(text))
        }
    }

    /// Padding of an empty last cell is noise in a terminal and in diffs.
    private static func trimmingTrailingSpaces(_ text: String) -> String {
        var text = text
        while text.last == " " { text.removeLast() }
        return text
    }

    /// `key: value` lines with the keys aligned.
    static func fields(_ pairs: [(String, String)]) {
        let width = pairs.map(\.0.count).max() ?? 0
        for (key, value) in pairs {
            line(trimmingTrailingSpaces(key + ":" + String(repeating: " ", count: width - key.count + 1) + value))
        }
    }
}

// MARK: - Values

extension TypedValue {
    /// The value as a JSONSerialization object: variants unwrapped, string-keyed
    /// dictionaries as objects, structures as arrays, 64-bit integers exact.
    var jsonObject: Any {
        switch self {
        case .byte(let v): return Int(v)
        case .boolean(let v): return v
        case .int16(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int64(let v): return NSNumber(value: v)
        case .uint64(let v): return NSNumber(value: v)
        case .double(let v): return v.isFinite ? v as Any : NSNull()
        case .string(let v), .objectPath(let v), .signature(let v): return v
        case .unixFD(let v): return Int(v)
        case .array(_, let elements): return elements.map(\.jsonObject)
        case .bytes(let bytes): return bytes.map { Int($0) }
        case .dictionary(_, _, let entries):
            var object: [String: Any] = [:]
            for entry in entries { object[entry.key.plainText] = entry.value.jsonObject }
            return object
        case .structure(let fields): return fields.map(\.jsonObject)
        case .variant(let inner): return inner.jsonObject
        }
    }

    /// Strings as they are, everything else in GVariant text format: what a
    /// person wants to read in a table cell or a `key: value` line.
    var plainText: String {
        switch self {
        case .string(let v), .objectPath(let v), .signature(let v): return v
        case .variant(let inner): return inner.plainText
        default: return GVariantText.format(self)
        }
    }
}

/// Unix microseconds as local time, `2026-11-21 09:30`; `-` for 0.
func formatMicroseconds(_ micros: Int64) -> String {
    guard micros != 0 else { return "-" }
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    return formatter.string(from: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
}

/// An a{sv} result as a dictionary keyed by its keys (variants unwrapped).
func dictionary(_ value: TypedValue) -> [String: TypedValue] {
    Dictionary((value.stringVariantEntries ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { _, last in last })
}
