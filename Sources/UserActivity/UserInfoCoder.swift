// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

/// Encodes a `Codable` value into user info: each stored property becomes a
/// key, with a D-Bus type that matches its Swift type.
///
/// | Swift | D-Bus |
/// |---|---|
/// | `String` | `s` |
/// | `Bool` | `b` |
/// | `Int`, `Int64` | `x` |
/// | `Int32` / `UInt32` | `i` / `u` |
/// | `Int16`, `Int8` / `UInt16` | `n` / `q` |
/// | `UInt8` | `y` |
/// | `UInt`, `UInt64` | `t` |
/// | `Double`, `Float` | `d` |
/// | `Date` | `x` (Unix microseconds, as the service's dates) |
/// | `URL` | `s` |
/// | `Data` | `ay` |
/// | arrays | `a<T>` when all elements have one type, else `av` |
/// | structs, dictionaries with string keys | `a{sv}` |
///
/// `nil` optionals are left out. The value itself must encode as a keyed
/// container (a struct or class with properties).
///
/// ```swift
/// struct DocumentRef: Codable { var path: String; var page: Int }
/// let info = try UserInfoEncoder().encode(DocumentRef(path: "/tmp/a.odt", page: 3))
/// // ["path": "/tmp/a.odt", "page": 3]
/// ```
public struct UserInfoEncoder: Sendable {
    public init() {}

    /// The user info `value` encodes to; throws `EncodingError` for a value
    /// that is not a keyed container, or holds `nil` inside an array.
    public func encode<T: Encodable>(_ value: T) throws -> [String: UserInfoValue] {
        let root = EncodedNode()
        try encodeValue(value, into: root, codingPath: [])
        guard case .keyed(let entries) = root.content else {
            throw EncodingError.invalidValue(value, .init(codingPath: [],
                debugDescription: "\(T.self) must encode as a keyed container (a struct or class with properties) to become user info"))
        }
        var result: [String: UserInfoValue] = [:]
        for (key, node) in entries { result[key] = UserInfoValue(typed: try node.typedValue(codingPath: [])) }
        return result
    }
}

/// Rebuilds a `Decodable` value from user info (the reverse of ``UserInfoEncoder``).
///
/// Numbers convert between D-Bus integer types when the value fits, so user
/// info written by another language (`u` from Python, say) still decodes.
public struct UserInfoDecoder: Sendable {
    public init() {}

    /// Rebuilds a `T`; throws `DecodingError` naming a missing key or a value of the wrong type.
    public func decode<T: Decodable>(_ type: T.Type, from userInfo: [String: UserInfoValue]) throws -> T {
        try decodeValue(type, from: UserInfoCoding.typedValue(userInfo), codingPath: [])
    }
}

// MARK: - Encoding

final class EncodedNode {
    enum Content {
        case empty
        case value(TypedValue)
        case keyed([(String, EncodedNode)])
        case unkeyed([EncodedNode])
    }
    var content: Content = .empty

    func typedValue(codingPath: [any CodingKey]) throws -> TypedValue {
        switch content {
        case .empty:
            return .stringVariantDictionary([])
        case .value(let value):
            return value
        case .keyed(let entries):
            var pairs: [(String, TypedValue)] = []
            for (key, node) in entries {
                let value = try node.typedValue(codingPath: codingPath)
                if let index = pairs.firstIndex(where: { $0.0 == key }) { pairs[index].1 = value } else { pairs.append((key, value)) }
            }
            return .stringVariantDictionary(pairs)
        case .unkeyed(let nodes):
            return UserInfoValue.array(try nodes.map { UserInfoValue(typed: try $0.typedValue(codingPath: codingPath)) }).typedValue
        }
    }

    func keyedChild(_ key: String) -> EncodedNode {
        let child = EncodedNode()
        if case .keyed(var entries) = content {
            entries.append((key, child))
            content = .keyed(entries)
        } else {
            content = .keyed([(key, child)])
        }
        return child
    }

    func unkeyedChild() -> EncodedNode {
        let child = EncodedNode()
        if case .unkeyed(var nodes) = content {
            nodes.append(child)
            content = .unkeyed(nodes)
        } else {
            content = .unkeyed([child])
        }
        return child
    }
}

/// Special cases first (types whose own Codable form is not what user info wants).
private func encodeValue<T: Encodable>(_ value: T, into node: EncodedNode, codingPath: [any CodingKey]) throws {
    switch value {
    case let date as Date: node.content = .value(.int64(unixMicroseconds(date)))
    case let url as URL: node.content = .value(.string(url.absoluteString))
    case let data as Data: node.content = .value(.bytes([UInt8](data)))
    case let value as UserInfoValue: node.content = .value(value.typedValue)
    default: try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .keyed = node.content {} else { node.content = .keyed([]) }
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .unkeyed = node.content {} else { node.content = .unkeyed([]) }
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeContainer(node: node, codingPath: codingPath)
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

private func basic(_ value: Any) -> TypedValue? {
    switch value {
    case let v as Bool: return .boolean(v)
    case let v as String: return .string(v)
    case let v as Double: return .double(v)
    case let v as Float: return .double(Double(v))
    case let v as Int: return .int64(Int64(v))
    case let v as Int8: return .int16(Int16(v))
    case let v as Int16: return .int16(v)
    case let v as Int32: return .int32(v)
    case let v as Int64: return .int64(v)
    case let v as UInt: return .uint64(UInt64(v))
    case let v as UInt8: return .byte(v)
    case let v as UInt16: return .uint16(v)
    case let v as UInt32: return .uint32(v)
    case let v as UInt64: return .uint64(v)
    default: return nil
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {}   // left out, like encodeIfPresent

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = node.keyedChild(key.stringValue)
        if let basic = basic(value) {
            child.content = .value(basic)
        } else {
            try encodeValue(value, into: child, codingPath: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.keyedChild(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.keyedChild(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.keyedChild("super"), codingPath: codingPath + [AnyKey(stringValue: "super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.keyedChild(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case .unkeyed(let nodes) = node.content { return nodes.count }
        return 0
    }

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(Optional<Int>.none as Any, .init(codingPath: codingPath,
            debugDescription: "D-Bus has no null: an array in user info cannot hold nil"))
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = AnyKey(intValue: count)
        let child = node.unkeyedChild()
        if let basic = basic(value) {
            child.content = .value(basic)
        } else {
            try encodeValue(value, into: child, codingPath: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = AnyKey(intValue: count)
        return NodeEncoder(node: node.unkeyedChild(), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = AnyKey(intValue: count)
        return NodeEncoder(node: node.unkeyedChild(), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = AnyKey(intValue: count)
        return NodeEncoder(node: node.unkeyedChild(), codingPath: codingPath + [key])
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws {
        throw EncodingError.invalidValue(Optional<Int>.none as Any, .init(codingPath: codingPath,
            debugDescription: "D-Bus has no null: leave the key out of user info instead"))
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if let basic = basic(value) {
            node.content = .value(basic)
        } else {
            try encodeValue(value, into: node, codingPath: codingPath)
        }
    }
}

// MARK: - Decoding

private func decodeValue<T: Decodable>(_ type: T.Type, from value: TypedValue, codingPath: [any CodingKey]) throws -> T {
    let value = value.unwrappedVariant
    func mismatch(_ expected: String) -> DecodingError {
        .typeMismatch(T.self, .init(codingPath: codingPath,
            debugDescription: "expected \(expected), found a value of D-Bus type '\(value.signature)'"))
    }
    switch type {
    case is Date.Type:
        guard let micros = UserInfoValue(typed: value).dateValue else { throw mismatch("a date (x, Unix microseconds)") }
        return micros as! T
    case is URL.Type:
        guard let text = value.stringValue, let url = URL(string: text) else { throw mismatch("a URL string") }
        return url as! T
    case is Data.Type:
        guard let data = UserInfoValue(typed: value).dataValue else { throw mismatch("bytes (ay)") }
        return data as! T
    case is UserInfoValue.Type:
        return UserInfoValue(typed: value) as! T
    default:
        return try T(from: NodeDecoder(value: value, codingPath: codingPath))
    }
}

private struct NodeDecoder: Decoder {
    let value: TypedValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary("s", _, let entries) = value else {
            throw DecodingError.typeMismatch([String: Any].self, .init(codingPath: codingPath,
                debugDescription: "expected a dictionary with string keys (a{sv}), found D-Bus type '\(value.signature)'"))
        }
        var values: [String: TypedValue] = [:]
        for entry in entries {
            if let key = entry.key.stringValue { values[key] = entry.value.unwrappedVariant }
        }
        return KeyedDecodingContainer(KeyedValueContainer<Key>(values: values, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let elements = value.arrayElements else {
            throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath,
                debugDescription: "expected an array, found D-Bus type '\(value.signature)'"))
        }
        return UnkeyedValueContainer(elements: elements.map(\.unwrappedVariant), codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }
}

/// Reads a basic Swift value out of a D-Bus value, converting between
/// numeric types when the value fits.
private func decodeBasicValue<T>(_ type: T.Type, _ value: TypedValue, codingPath: [any CodingKey]) throws -> T {
    let info = UserInfoValue(typed: value)
    func fail(_ expected: String) -> DecodingError {
        .typeMismatch(T.self, .init(codingPath: codingPath,
            debugDescription: "expected \(expected), found a value of D-Bus type '\(value.signature)'"))
    }
    func integer<I: FixedWidthInteger>(_: I.Type) throws -> I {
        let converted: I?
        switch value {
        case .uint64(let v): converted = I(exactly: v)
        case .int64(let v): converted = I(exactly: v)
        default: converted = info.intValue.flatMap { I(exactly: $0) }
        }
        guard let converted else { throw fail("an integer that fits \(I.self)") }
        return converted
    }
    let result: Any
    switch type {
    case is Bool.Type:
        guard let v = info.boolValue else { throw fail("a boolean (b)") }
        result = v
    case is String.Type:
        guard let v = value.stringValue else { throw fail("a string (s)") }
        result = v
    case is Double.Type:
        guard let v = info.doubleValue else { throw fail("a number (d)") }
        result = v
    case is Float.Type:
        guard let v = info.doubleValue else { throw fail("a number (d)") }
        result = Float(v)
    case is Int.Type: result = try integer(Int.self)
    case is Int8.Type: result = try integer(Int8.self)
    case is Int16.Type: result = try integer(Int16.self)
    case is Int32.Type: result = try integer(Int32.self)
    case is Int64.Type: result = try integer(Int64.self)
    case is UInt.Type: result = try integer(UInt.self)
    case is UInt8.Type: result = try integer(UInt8.self)
    case is UInt16.Type: result = try integer(UInt16.self)
    case is UInt32.Type: result = try integer(UInt32.self)
    case is UInt64.Type: result = try integer(UInt64.self)
    default: throw fail("\(T.self)")
    }
    return result as! T
}

private struct KeyedValueContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let values: [String: TypedValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { values.keys.sorted().compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { values[key.stringValue] != nil }

    private func value(_ key: Key) throws -> TypedValue {
        guard let value = values[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                debugDescription: "no user-info key '\(key.stringValue)'"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { values[key.stringValue] == nil }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodeBasicValue(type, value(key), codingPath: codingPath + [key]) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeValue(type, from: value(key), codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(value: value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(value: value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(value: values["super"] ?? .stringVariantDictionary([]), codingPath: codingPath + [AnyKey(stringValue: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(value: values[key.stringValue] ?? .stringVariantDictionary([]), codingPath: codingPath + [key])
    }
}

private struct UnkeyedValueContainer: UnkeyedDecodingContainer {
    let elements: [TypedValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [TypedValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> (TypedValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath + [AnyKey(intValue: currentIndex)],
                debugDescription: "the array has only \(elements.count) elements"))
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], codingPath + [AnyKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next()
        if let basicType = type as? any BasicUserInfoType.Type {
            return try basicType.decodeBasic(value, codingPath: path) as! T
        }
        return try decodeValue(type, from: value, codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next()
        return try NodeDecoder(value: value, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next()
        return try NodeDecoder(value: value, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next()
        return NodeDecoder(value: value, codingPath: path)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: TypedValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let basicType = type as? any BasicUserInfoType.Type {
            return try basicType.decodeBasic(value, codingPath: codingPath) as! T
        }
        return try decodeValue(type, from: value, codingPath: codingPath)
    }
}

/// The types decoded straight from a D-Bus value.
private protocol BasicUserInfoType {
    static func decodeBasic(_ value: TypedValue, codingPath: [any CodingKey]) throws -> Self
}

extension BasicUserInfoType {
    static func decodeBasic(_ value: TypedValue, codingPath: [any CodingKey]) throws -> Self {
        try decodeBasicValue(Self.self, value, codingPath: codingPath)
    }
}

extension Bool: BasicUserInfoType {}
extension String: BasicUserInfoType {}
extension Double: BasicUserInfoType {}
extension Float: BasicUserInfoType {}
extension Int: BasicUserInfoType {}
extension Int8: BasicUserInfoType {}
extension Int16: BasicUserInfoType {}
extension Int32: BasicUserInfoType {}
extension Int64: BasicUserInfoType {}
extension UInt: BasicUserInfoType {}
extension UInt8: BasicUserInfoType {}
extension UInt16: BasicUserInfoType {}
extension UInt32: BasicUserInfoType {}
extension UInt64: BasicUserInfoType {}
