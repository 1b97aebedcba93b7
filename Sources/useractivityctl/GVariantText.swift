// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The GVariant text format (as `gdbus call` reads and prints it), for typed
/// values on the command line: `3` is an int32, `uint32 3` a uint32,
/// `'Report'` a string, `[1, 2]` an `ai`, `{'a': <1>}` an `a{sv}`,
/// `@as []` an empty string array, `<true>` a variant, `(1, 'x')` a structure.
///
/// With an expected type the text is read as that type, so numbers take it
/// and empty containers need no annotation (`--user-info ids:au=[]`).
enum GVariantText {
    struct SyntaxError: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses `text` completely, as `expected` when given.
    static func parse(_ text: String, as expected: String? = nil) throws(SyntaxError) -> TypedValue {
        if let expected, !Signature.isSingleCompleteType(expected) {
            throw SyntaxError(description: "'\(expected)' is not a single D-Bus type (examples: s, u, as, a{sv})")
        }
        var parser = Parser(Array(text.unicodeScalars))
        let value = try parser.value(expected: expected)
        parser.skipSpace()
        guard parser.atEnd else {
            throw SyntaxError(description: "unexpected text after the value: '\(parser.rest)' in '\(text)'")
        }
        return value
    }

    /// The value written the way ``parse(_:as:)`` reads it back with the same type.
    static func format(_ value: TypedValue) -> String {
        switch value {
        case .byte(let v): return "byte \(v)"
        case .boolean(let v): return v ? "true" : "false"
        case .int16(let v): return "int16 \(v)"
        case .uint16(let v): return "uint16 \(v)"
        case .int32(let v): return "\(v)"
        case .uint32(let v): return "uint32 \(v)"
        case .int64(let v): return "int64 \(v)"
        case .uint64(let v): return "uint64 \(v)"
        case .double(let v):
            let text = "\(v)"
            return text.contains(".") || text.contains("e") || !v.isFinite ? text : text + ".0"
        case .string(let v): return quote(v)
        case .objectPath(let v): return "objectpath " + quote(v)
        case .signature(let v): return "signature " + quote(v)
        case .unixFD(let v): return "handle \(v)"
        case .array(let elementType, let elements):
            let body = "[" + elements.map(format).joined(separator: ", ") + "]"
            return elements.isEmpty ? "@a\(elementType) []" : body
        case .bytes(let bytes):
            return bytes.isEmpty ? "@ay []" : format(.array(elementType: "y", bytes.map(TypedValue.byte)))
        case .dictionary(let keyType, let valueType, let entries):
            if entries.isEmpty { return "@a{\(keyType)\(valueType)} {}" }
            return "{" + entries.map { format($0.key) + ": " + format($0.value) }.joined(separator: ", ") + "}"
        case .structure(let fields):
            return "(" + fields.map(format).joined(separator: ", ") + (fields.count == 1 ? ",)" : ")")
        case .variant(let inner): return "<" + format(inner) + ">"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }

    private static let keywords: [String: String] = [
        "boolean": "b", "byte": "y", "int16": "n", "uint16": "q", "int32": "i", "uint32": "u",
        "int64": "x", "uint64": "t", "double": "d", "string": "s", "objectpath": "o", "signature": "g", "handle": "h",
    ]

    private struct Parser {
        let text: [Unicode.Scalar]
        var index = 0

        init(_ text: [Unicode.Scalar]) { self.text = text }

        var atEnd: Bool { index >= text.count }
        var rest: String { String(String.UnicodeScalarView(text[index...])) }
        var peek: Unicode.Scalar? { atEnd ? nil : text[index] }

        mutating func skipSpace() {
            while let c = peek, c == " " || c == "\t" || c == "\n" { index += 1 }
        }

        func fail(_ message: String) -> SyntaxError {
            SyntaxError(description: message + (atEnd ? " at the end" : " at '\(rest.prefix(20))'"))
        }

        mutating func expect(_ c: Unicode.Scalar) throws(SyntaxError) {
            skipSpace()
            guard peek == c else { throw fail("expected '\(c)'") }
            index += 1
        }

        /// A word of letters, digits and `_` (keywords, numbers, true/false).
        mutating func word() -> String {
            var out = ""
            while let c = peek, c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "." || c == "+" || c == "-" {
                out.unicodeScalars.append(c)
                index += 1
            }
            return out
        }

        mutating func value(expected: String?) throws(SyntaxError) -> TypedValue {
            skipSpace()
            guard let c = peek else { throw fail("expected a value") }
            // A variant wanted but a plain value given: wrap it, as a convenience.
            if expected == "v" && c != "<" {
                return .variant(try value(expected: nil))
            }
            switch c {
            case "@":
                index += 1
                let start = index
                while let t = peek, t != " " && t != "\t" { index += 1 }
                let type = String(String.UnicodeScalarView(text[start..<index]))
                guard Signature.isSingleCompleteType(type) else { throw fail("'@\(type)' is not a single D-Bus type") }
                if let expected, expected != type { throw fail("the annotation @\(type) contradicts the expected type \(expected)") }
                return try value(expected: type)
            case "<":
                guard expected == nil || expected == "v" else { throw fail("a variant <…> where \(expected!) is expected") }
                index += 1
                let inner = try value(expected: nil)
                try expect(">")
                return .variant(inner)
            case "[":
                return try array(expected: expected)
            case "{":
                return try dictionary(expected: expected)
            case "(":
                return try structure(expected: expected)
            case "'", "\"":
                let string = try quoted()
                switch expected {
                case nil, "s": return .string(string)
                case "o": return .objectPath(string)
                case "g": return .signature(string)
                default: throw fail("a string where \(expected!) is expected")
                }
            default:
                let start = index
                let word = self.word()
                if let code = keywords[word] {
                    if let expected, expected != code { throw fail("'\(word)' contradicts the expected type \(expected)") }
                    skipSpace()
                    return try value(expected: code)
                }
                if word == "true" || word == "false" {
                    guard expected == nil || expected == "b" else { throw fail("a boolean where \(expected!) is expected") }
                    return .boolean(word == "true")
                }
                guard !word.isEmpty else { throw fail("unexpected character '\(c)'") }
                let numeric = word.first.map { "0123456789+-.".contains($0) } == true
                    || ["inf", "nan"].contains(word.lowercased())
                guard numeric else {
                    index = start
                    throw SyntaxError(description: "'\(word)' is not a GVariant value: quote text ('\(word)'), or give the type (key:s=\(word))")
                }
                return try number(word, expected: expected)
            }
        }

        mutating func quoted() throws(SyntaxError) -> String {
            let quote = text[index]
            index += 1
            var out = ""
            while let c = peek {
                index += 1
                if c == quote { return out }
                if c == "\\" {
                    guard let e = peek else { break }
                    index += 1
                    switch e {
                    case "n": out += "\n"
                    case "t": out += "\t"
                    case "r": out += "\r"
                    case "u", "U":
                        let digits = e == "u" ? 4 : 8
                        guard index + digits <= text.count,
                              let code = UInt32(String(String.UnicodeScalarView(text[index..<index + digits])), radix: 16),
                              let scalar = Unicode.Scalar(code) else { throw fail("a bad \\\(e) escape") }
                        index += digits
                        out.unicodeScalars.append(scalar)
                    default: out.unicodeScalars.append(e)
                    }
                } else {
                    out.unicodeScalars.append(c)
                }
            }
            throw fail("an unterminated string")
        }

        func number(_ word: String, expected: String?) throws(SyntaxError) -> TypedValue {
            let isFloat = word.contains(".") || (!word.lowercased().hasPrefix("0x") && word.lowercased().contains("e"))
                || ["inf", "-inf", "nan"].contains(word.lowercased())
            func integer<T: FixedWidthInteger>(_: T.Type) throws(SyntaxError) -> T {
                var digits = word
                var negative = false
                if digits.hasPrefix("-") { negative = true; digits.removeFirst() } else if digits.hasPrefix("+") { digits.removeFirst() }
                var radix = 10
                if digits.lowercased().hasPrefix("0x") { radix = 16; digits.removeFirst(2) }
                guard !isFloat, let magnitude = UInt64(digits, radix: radix) else {
                    throw SyntaxError(description: "'\(word)' is not an integer")
                }
                if negative {
                    guard T.isSigned, magnitude <= UInt64(T.max) + 1 else { throw SyntaxError(description: "\(word) is out of range for \(T.self)") }
                    return magnitude == UInt64(T.max) + 1 ? T.min : T.zero - T(magnitude)
                }
                guard magnitude <= UInt64(T.max) else { throw SyntaxError(description: "\(word) is out of range for \(T.self)") }
                return T(magnitude)
            }
            switch expected {
            case nil: return isFloat ? .double(try double(word)) : .int32(try integer(Int32.self))
            case "y": return .byte(try integer(UInt8.self))
            case "n": return .int16(try integer(Int16.self))
            case "q": return .uint16(try integer(UInt16.self))
            case "i": return .int32(try integer(Int32.self))
            case "u": return .uint32(try integer(UInt32.self))
            case "x": return .int64(try integer(Int64.self))
            case "t": return .uint64(try integer(UInt64.self))
            case "d": return .double(try double(word))
            case "h": return .unixFD(try integer(Int32.self))
            default:
                throw SyntaxError(description: "'\(word)' where \(expected!) is expected (quote strings: '\(word)')")
            }
        }

        func double(_ word: String) throws(SyntaxError) -> Double {
            guard let value = Double(word) else { throw SyntaxError(description: "'\(word)' is not a number") }
            return value
        }

        /// The element type of an array type `a…`, nil when not an array.
        static func elementType(of type: String) -> String? {
            guard type.hasPrefix("a"), !type.hasPrefix("a{") else { return nil }
            return String(type.dropFirst())
        }

        mutating func array(expected: String?) throws(SyntaxError) -> TypedValue {
            var elementType: String?
            if let expected {
                guard let element = Self.elementType(of: expected) else { throw fail("an array […] where \(expected) is expected") }
                elementType = element
            }
            index += 1
            var elements: [TypedValue] = []
            skipSpace()
            if peek == "]" {
                index += 1
                guard let elementType else { throw SyntaxError(description: "an empty array needs its type: @as [], or key:as=[]") }
                return .array(elementType: elementType, [])
            }
            while true {
                let element = try value(expected: elementType)
                elementType = elementType ?? element.signature
                elements.append(element)
                skipSpace()
                if peek == "," { index += 1; continue }
                try expect("]")
                return .array(elementType: elementType!, elements)
            }
        }

        mutating func dictionary(expected: String?) throws(SyntaxError) -> TypedValue {
            var keyType: String?
            var valueType: String?
            if let expected {
                guard expected.hasPrefix("a{"), let types = Signature.completeTypes(of: String(expected.dropFirst(2).dropLast())),
                      types.count == 2 else { throw fail("a dictionary {…} where \(expected) is expected") }
                keyType = types[0]
                valueType = types[1]
            }
            index += 1
            var entries: [TypedValue.DictionaryEntry] = []
            skipSpace()
            if peek == "}" {
                index += 1
                guard let keyType, let valueType else { throw SyntaxError(description: "an empty dictionary needs its type: @a{sv} {}, or key:a{sv}={}") }
                return .dictionary(keyType: keyType, valueType: valueType, [])
            }
            while true {
                let key = try value(expected: keyType)
                guard key.signature.count == 1, !["v", "a", "("].contains(key.signature) else {
                    throw fail("a dictionary key must be a basic type, not \(key.signature)")
                }
                try expect(":")
                let entryValue = try value(expected: valueType)
                keyType = keyType ?? key.signature
                valueType = valueType ?? entryValue.signature
                entries.append(.init(key: key, value: entryValue))
                skipSpace()
                if peek == "," { index += 1; continue }
                try expect("}")
                return .dictionary(keyType: keyType!, valueType: valueType!, entries)
            }
        }

        mutating func structure(expected: String?) throws(SyntaxError) -> TypedValue {
            var fieldTypes: [String]?
            if let expected {
                guard expected.hasPrefix("("), let types = Signature.completeTypes(of: String(expected.dropFirst().dropLast())) else {
                    throw fail("a structure (…) where \(expected) is expected")
                }
                fieldTypes = types
            }
            index += 1
            var fields: [TypedValue] = []
            while true {
                skipSpace()
                if peek == ")" { index += 1; break }
                let fieldType = fieldTypes.flatMap { fields.count < $0.count ? $0[fields.count] : nil }
                if fieldTypes != nil && fieldType == nil { throw fail("more fields than \(expected!) has") }
                fields.append(try value(expected: fieldType))
                skipSpace()
                if peek == "," { index += 1; continue }
                try expect(")")
                break
            }
            guard !fields.isEmpty else { throw fail("D-Bus has no empty structure") }
            if let fieldTypes, fieldTypes.count != fields.count { throw fail("\(expected!) needs \(fieldTypes.count) fields") }
            return .structure(fields)
        }
    }
}

/// One `--user-info` argument: `key=<GVariant text>` or `key:TYPE=<text>`.
///
/// With a basic TYPE the text is taken as it is (`title:s=Q3 report`,
/// `page:u=3`); with a container TYPE it is GVariant text read as that type
/// (`ids:au=[1, 2]`).
func parseUserInfoEntry(_ argument: String) throws(GVariantText.SyntaxError) -> (String, TypedValue) {
    guard let equals = argument.firstIndex(of: "=") else {
        throw .init(description: "'\(argument)' is not key=value (for example page=uint32 3, name='x', or name:s=x)")
    }
    var key = String(argument[..<equals])
    let text = String(argument[argument.index(after: equals)...])
    var type: String?
    if let colon = key.lastIndex(of: ":") {
        type = String(key[key.index(after: colon)...])
        key = String(key[..<colon])
    }
    guard !key.isEmpty else { throw .init(description: "'\(argument)' has an empty key") }
    let value: TypedValue
    do {
        switch type {
        case "s": value = .string(text)
        case "o": value = .objectPath(text)
        case "g": value = .signature(text)
        default: value = try GVariantText.parse(text, as: type)
        }
    } catch {
        throw .init(description: "user-info '\(key)': \(error.description)")
    }
    return (key, value)
}
