// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// Random D-Bus types and values of those types.
///
/// Used for user-info values in-process (where anything a `TypedValue` can
/// hold is fair game) and for calls over the bus, where every value must be
/// one libdbus will marshal: libdbus treats an invalid object path,
/// signature or nesting as a programming error of the sender and aborts, so
/// `busSafe` keeps within its rules and the nesting limits of the D-Bus
/// specification (32 nested arrays, 32 nested structures, 64 in total with
/// variants). What lies beyond those limits is sent over a raw socket by
/// the tests instead (see `RawBusTests`).
public struct ValueGenerator {
    public struct Configuration: Sendable {
        /// Containers (arrays, dictionary entries, structures, variants) in total.
        public var maximumDepth = 8
        public var maximumElements = 6
        public var maximumStringBytes = 64
        /// Occasionally produce a string of this many bytes (huge strings).
        public var hugeStringBytes = 0
        /// The fd to put in `h` values; nil never generates `h`.
        public var fileDescriptor: Int32? = nil
        /// Keep to what libdbus will send (valid paths and signatures, no NUL in strings, D-Bus nesting limits).
        public var busSafe = true
        /// Also generate object paths and signatures (`o`, `g`).
        public var allowPathsAndSignatures = true
        /// Stop nesting a type once its signature is this long (D-Bus allows
        /// 255 bytes for a message's whole signature).
        public var maximumSignatureLength = 200

        public init() {}
    }

    public var configuration: Configuration

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    private struct Depth {
        var total = 0
        var arrays = 0
        var structures = 0
    }

    private var basicCodes: [Character] {
        var codes: [Character] = ["y", "b", "n", "q", "i", "u", "x", "t", "d", "s"]
        if configuration.allowPathsAndSignatures { codes += ["o", "g"] }
        if configuration.fileDescriptor != nil { codes.append("h") }
        return codes
    }

    // MARK: Types

    /// One complete type.
    public func signature(_ input: inout FuzzInput) -> String {
        var depth = Depth()
        var length = 0
        return signature(&input, &depth, &length)
    }

    private func signature(_ input: inout FuzzInput, _ depth: inout Depth, _ length: inout Int) -> String {
        // Signatures are at most 255 bytes; stop nesting well before.
        let canNest = depth.total < configuration.maximumDepth && length < configuration.maximumSignatureLength
        let roll = input.int(0...9)
        if !canNest || roll < 5 {
            length += 1
            return String(input.pick(basicCodes))
        }
        switch roll {
        case 5 where depth.arrays < 32:
            depth.total += 1; depth.arrays += 1; length += 1
            defer { depth.total -= 1; depth.arrays -= 1 }
            return "a" + signature(&input, &depth, &length)
        case 6 where depth.arrays < 32 && depth.structures < 32:
            // A dictionary: an array of dictionary entries.
            depth.total += 2; depth.arrays += 1; depth.structures += 1; length += 4
            defer { depth.total -= 2; depth.arrays -= 1; depth.structures -= 1 }
            let key = String(input.pick(basicCodes))
            return "a{" + key + signature(&input, &depth, &length) + "}"
        case 7 where depth.structures < 32:
            depth.total += 1; depth.structures += 1; length += 2
            defer { depth.total -= 1; depth.structures -= 1 }
            let count = input.int(1...3)
            return "(" + (0..<count).map { _ in signature(&input, &depth, &length) }.joined() + ")"
        default:
            length += 1
            return "v"
        }
    }

    // MARK: Values

    /// A value of `signature` (one complete type).
    public func value(of signature: String, _ input: inout FuzzInput) -> TypedValue {
        var depth = Depth()
        var chars = Substring(signature)
        return value(&chars, &input, &depth)
    }

    /// A value of a random type.
    public func value(_ input: inout FuzzInput) -> TypedValue {
        value(of: signature(&input), &input)
    }

    /// Consumes one complete type from `chars` and returns a value of it.
    private func value(_ chars: inout Substring, _ input: inout FuzzInput, _ depth: inout Depth) -> TypedValue {
        let code = chars.removeFirst()
        switch code {
        case "y": return .byte(input.byte())
        case "b": return .boolean(input.bool())
        case "n": return .int16(Int16(truncatingIfNeeded: input.uint64()))
        case "q": return .uint16(UInt16(truncatingIfNeeded: input.uint64()))
        case "i": return .int32(Int32(truncatingIfNeeded: input.uint64()))
        case "u": return .uint32(input.pick([0, 1, 200, 201, UInt32.max, UInt32(truncatingIfNeeded: input.uint64())]))
        case "x": return .int64(input.pick([0, -1, Int64.min, Int64.max, Int64(truncatingIfNeeded: input.uint64())]))
        case "t": return .uint64(input.uint64())
        case "d": return .double(double(&input))
        case "s": return .string(string(&input))
        case "o": return .objectPath(objectPath(&input))
        case "g": return .signature(input.chance(20) ? "" : signature(&input))
        case "h": return .unixFD(configuration.fileDescriptor ?? Int32(truncatingIfNeeded: input.uint64()))
        case "v":
            depth.total += 1
            defer { depth.total -= 1 }
            let canNest = depth.total < configuration.maximumDepth
            // The variant's own type is chosen here, with the depth left.
            var innerDepth = depth
            var length = 0
            let innerSignature = canNest ? innerSignatureWithin(&input, &innerDepth, &length) : String(input.pick(basicCodes))
            var innerChars = Substring(innerSignature)
            return .variant(value(&innerChars, &input, &depth))
        case "a":
            depth.total += 1; depth.arrays += 1
            defer { depth.total -= 1; depth.arrays -= 1 }
            if chars.first == "{" {
                chars.removeFirst()
                let keyType = String(chars.removeFirst())
                let valueType = completeType(&chars)
                chars.removeFirst() // "}"
                depth.total += 1; depth.structures += 1
                defer { depth.total -= 1; depth.structures -= 1 }
                let count = elementCount(&input)
                var entries: [TypedValue.DictionaryEntry] = []
                for _ in 0..<count {
                    var k = Substring(keyType)
                    var v = Substring(valueType)
                    entries.append(.init(key: value(&k, &input, &depth), value: value(&v, &input, &depth)))
                }
                return .dictionary(keyType: keyType, valueType: valueType, entries)
            }
            let elementType = completeType(&chars)
            let count = elementCount(&input)
            return .array(elementType: elementType, (0..<count).map { _ in
                var e = Substring(elementType)
                return value(&e, &input, &depth)
            })
        case "(":
            depth.total += 1; depth.structures += 1
            defer { depth.total -= 1; depth.structures -= 1 }
            var fields: [TypedValue] = []
            while chars.first != ")" { fields.append(value(&chars, &input, &depth)) }
            chars.removeFirst()
            return .structure(fields)
        default:
            preconditionFailure("not a type code: \(code)")
        }
    }

    private func innerSignatureWithin(_ input: inout FuzzInput, _ depth: inout Depth, _ length: inout Int) -> String {
        signature(&input, &depth, &length)
    }

    /// Removes one complete type from the front of `chars` and returns it.
    private func completeType(_ chars: inout Substring) -> String {
        var index = chars.startIndex
        while chars[index] == "a" { index = chars.index(after: index) }
        if chars[index] == "(" || chars[index] == "{" {
            var level = 0
            repeat {
                let c = chars[index]
                if c == "(" || c == "{" { level += 1 } else if c == ")" || c == "}" { level -= 1 }
                index = chars.index(after: index)
            } while level > 0
        } else {
            index = chars.index(after: index)
        }
        let type = String(chars[chars.startIndex..<index])
        chars = chars[index...]
        return type
    }

    private func elementCount(_ input: inout FuzzInput) -> Int {
        input.chance(25) ? 0 : input.int(1...configuration.maximumElements)
    }

    private func double(_ input: inout FuzzInput) -> Double {
        input.pick([0.0, -0.0, .nan, Double(bitPattern: 0x7ff8_0000_0000_0123), .infinity, -.infinity,
                    .leastNonzeroMagnitude, .greatestFiniteMagnitude, Double(bitPattern: input.uint64())])
    }

    /// Strings that exercise length accounting, Unicode and (in-process only) NUL.
    public func string(_ input: inout FuzzInput) -> String {
        let pieces = ["a", "Z", "0", " ", "-", ".", "é", "ß", "世", "界", "😀", "\u{301}", "\u{200B}", "\u{FFFD}",
                      "%", "'", "\"", "\\", "\n", "\t", "<", "&", "OR", "NOT", "NEAR", "*", "^"]
        if configuration.hugeStringBytes > 0 && input.chance(3) {
            return String(repeating: input.pick(["x", "é", "😀"]), count: input.int(1...configuration.hugeStringBytes) / 4 + 1)
        }
        var result = ""
        let count = input.int(0...max(0, configuration.maximumStringBytes / 2))
        for _ in 0..<count {
            if !configuration.busSafe && input.chance(2) { result.append("\0") }
            result += input.pick(pieces)
            if result.utf8.count >= configuration.maximumStringBytes { break }
        }
        return result
    }

    /// A syntactically valid object path (libdbus refuses to send any other).
    public func objectPath(_ input: inout FuzzInput) -> String {
        if input.chance(20) { return "/" }
        let elements = input.int(1...4)
        let alphabet = Array("abcXYZ019_")
        return (0..<elements).map { _ in
            "/" + String((0..<input.int(1...8)).map { _ in input.pick(alphabet) })
        }.joined()
    }
}

extension TypedValue {
    /// Nesting as D-Bus counts it towards its limit of 64: a dictionary is
    /// two levels (the array and its entries).
    public var dbusNestingDepth: Int {
        switch self {
        case .array(_, let elements): return 1 + (elements.map(\.dbusNestingDepth).max() ?? 0)
        case .bytes: return 1
        case .dictionary(_, _, let entries):
            return 2 + (entries.map { max($0.key.dbusNestingDepth, $0.value.dbusNestingDepth) }.max() ?? 0)
        case .structure(let fields): return 1 + (fields.map(\.dbusNestingDepth).max() ?? 0)
        case .variant(let inner): return 1 + inner.dbusNestingDepth
        default: return 0
        }
    }

    /// The deepest nesting of containers (arrays, dictionary entries, structures, variants).
    public var containerDepth: Int {
        switch self {
        case .array(_, let elements): return 1 + (elements.map(\.containerDepth).max() ?? 0)
        case .bytes: return 1
        case .dictionary(_, _, let entries):
            return 1 + (entries.map { max($0.key.containerDepth, $0.value.containerDepth) }.max() ?? 0)
        case .structure(let fields): return 1 + (fields.map(\.containerDepth).max() ?? 0)
        case .variant(let inner): return 1 + inner.containerDepth
        default: return 0
        }
    }
}
