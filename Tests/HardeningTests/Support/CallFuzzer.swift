// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import UserActivityInterfaces
import DBusKit
import Foundation
import TestSupport
import TypedValues
import UserActivityCore
import UserActivityService

/// One generated message for the daemon.
struct FuzzCall {
    var path: String
    var interface: String?
    var member: String
    var arguments: [TypedValue]
    var expectsReply = true
    /// Client-side timeout; a Continue may legitimately take its timeout-ms.
    var timeoutMilliseconds: Int32 = 10_000
    /// What the call was meant to exercise, for the statistics.
    var shape: String
}

/// Generates calls with random members, signatures and values, mostly
/// shaped like the contract's (so that they get past the signature check
/// and into the handlers) and partly not at all.
///
/// Values are what libdbus will send (see ``ValueGenerator``): the rest
/// never reaches the daemon (`RawBusTests`).
struct CallFuzzer {
    var input: FuzzInput
    let values: ValueGenerator
    /// A descriptor to put in `h` values (libdbus needs a real one).
    let fileDescriptor: Int32

    init(seed: UInt64, fileDescriptor: Int32) {
        input = FuzzInput(seed: seed)
        self.fileDescriptor = fileDescriptor
        var configuration = ValueGenerator.Configuration()
        configuration.maximumDepth = 6
        configuration.maximumElements = 5
        configuration.maximumStringBytes = 48
        configuration.hugeStringBytes = 256 * 1024
        configuration.fileDescriptor = fileDescriptor
        // Four arguments of this must stay within the 255 bytes of a message signature.
        configuration.maximumSignatureLength = 48
        values = ValueGenerator(configuration)
    }

    static let types = [UA.editType, UA.editorView, UA.viewType, UA.playType, UA.sandboxedType,
                        "com.example.Editor.undeclared", "com.example.Other.x", "x", "", "1a.b", "a..b", "é.x"]
    static let apps = [UA.editor, UA.viewer, UA.player, UA.sandboxed, "com.example.NotInstalled", "x", "", "com..x"]

    // MARK: Calls

    /// - Parameters:
    ///   - livePaths: activity paths this connection created (and others').
    ///   - savedIDs: ids Donate returned.
    mutating func next(livePaths: [String], savedIDs: [String]) -> FuzzCall {
        switch input.int(0...99) {
        case 0..<40: return managerCall(savedIDs: savedIDs)
        case 40..<55: return activityCall(livePaths: livePaths)
        case 55..<65: return propertiesCall(livePaths: livePaths)
        case 65..<74: return wrongSignature(livePaths: livePaths)
        case 74..<82: return randomMember(livePaths: livePaths)
        case 82..<89: return unknownPath()
        case 89..<95: return standardCall(livePaths: livePaths)
        default:
            var call = managerCall(savedIDs: savedIDs)
            call.expectsReply = false
            call.shape = "no-reply " + call.shape
            return call
        }
    }

    mutating func managerCall(savedIDs: [String]) -> FuzzCall {
        let method = input.pick(Interfaces.manager.methods)
        let arguments = method.inputs.map { argument($0.name, $0.signature, method: method.name, savedIDs: savedIDs) }
        let isContinue = method.name.hasPrefix("Continue")
        return FuzzCall(path: UA.managerPath, interface: input.chance(90) ? UA.manager : nil, member: method.name,
                        arguments: arguments, timeoutMilliseconds: isContinue ? 5000 : 10_000, shape: "manager.\(method.name)")
    }

    mutating func activityCall(livePaths: [String]) -> FuzzCall {
        let method = input.pick(Interfaces.activity.methods)
        let arguments = method.inputs.map { argument($0.name, $0.signature, method: method.name, savedIDs: []) }
        return FuzzCall(path: activityPath(livePaths), interface: UA.activity, member: method.name, arguments: arguments,
                        timeoutMilliseconds: method.name == "Continue" ? 5000 : 10_000, shape: "activity.\(method.name)")
    }

    mutating func propertiesCall(livePaths: [String]) -> FuzzCall {
        let onManager = input.chance(40)
        let path = onManager ? UA.managerPath : activityPath(livePaths)
        let interface = input.pick([UA.manager, UA.activity, "", "org.example.Nope", UA.properties])
        let names = (onManager ? Interfaces.manager.properties.map(\.name) : ActivityField.allCases.map(\.propertyName))
            + ["", "Nope", "title", String(repeating: "N", count: 300)]
        let name = input.pick(names)
        switch input.int(0...2) {
        case 0: return FuzzCall(path: path, interface: UA.properties, member: "Get", arguments: [.string(interface), .string(name)], shape: "Properties.Get")
        case 1: return FuzzCall(path: path, interface: UA.properties, member: "GetAll", arguments: [.string(interface)], shape: "Properties.GetAll")
        default:
            var value: TypedValue
            if input.chance(60), let field = ActivityField(propertyName: name) {
                value = ParserProperties.wellTyped(field, &input, values: values)
            } else if input.chance(50), let signature = PrivacySettings.signature(of: name) {
                value = values.value(of: signature, &input)
                // Pausing or blocking would turn later Donates into no-ops; keep them rare.
                if name == "Paused" || name.hasPrefix("Blocked") || name == "MaxSavedPerApplication", input.chance(80) {
                    value = name == "Paused" ? .boolean(false) : name == "MaxSavedPerApplication" ? .uint32(0) : .stringArray([])
                }
            } else {
                value = values.value(&input)
            }
            return FuzzCall(path: path, interface: UA.properties, member: "Set",
                            arguments: [.string(interface), .string(name), .variant(value)], shape: "Properties.Set")
        }
    }

    /// A known member with arguments of the wrong types or number.
    mutating func wrongSignature(livePaths: [String]) -> FuzzCall {
        let onManager = input.bool()
        let method = input.pick(onManager ? Interfaces.manager.methods : Interfaces.activity.methods)
        let arguments = (0..<input.int(0...4)).map { _ in values.value(&input) }
        return FuzzCall(path: onManager ? UA.managerPath : activityPath(livePaths),
                        interface: onManager ? UA.manager : UA.activity, member: method.name, arguments: arguments,
                        timeoutMilliseconds: 15_000, shape: "wrong signature")
    }

    mutating func randomMember(livePaths: [String]) -> FuzzCall {
        let path = input.bool() ? UA.managerPath : activityPath(livePaths)
        let interface: String? = input.chance(20) ? nil : input.pick([UA.manager, UA.activity, UA.properties, "org.freedesktop.DBus.Peer",
                                                                      "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.ObjectManager",
                                                                      shortName() + "." + shortName()])
        return FuzzCall(path: path, interface: interface, member: memberName(),
                        arguments: (0..<input.int(0...3)).map { _ in values.value(&input) }, shape: "random member")
    }

    mutating func unknownPath() -> FuzzCall {
        let below = values.objectPath(&input)
        let path = input.pick([values.objectPath(&input), UA.managerPath + (below == "/" ? "/x" : below),
                               UA.activityPrefix + input.pick(["0", "999999", "abc", "1/2", "_"]),
                               UA.managerPath + "/activity", "/", "/org", "/org/example"])
        let method = input.pick(Interfaces.manager.methods)
        return FuzzCall(path: path, interface: input.pick([UA.manager, UA.activity, "org.freedesktop.DBus.Introspectable"]),
                        member: input.chance(30) ? "Introspect" : method.name,
                        arguments: input.chance(30) ? [] : method.inputs.map { argument($0.name, $0.signature, method: method.name, savedIDs: []) },
                        shape: "unknown path")
    }

    mutating func standardCall(livePaths: [String]) -> FuzzCall {
        switch input.int(0...4) {
        case 0: return FuzzCall(path: UA.managerPath, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects", arguments: [], shape: "GetManagedObjects")
        case 1: return FuzzCall(path: input.pick([UA.managerPath, activityPath(livePaths), UA.managerPath + "/activity", "/", "/org/example"]),
                                interface: "org.freedesktop.DBus.Introspectable", member: "Introspect", arguments: [], shape: "Introspect")
        case 2: return FuzzCall(path: activityPath(livePaths), interface: "org.freedesktop.DBus.Peer", member: "Ping", arguments: [], shape: "Peer.Ping")
        case 3: return FuzzCall(path: UA.managerPath, interface: "org.freedesktop.DBus.Peer", member: "GetMachineId", arguments: [], shape: "Peer.GetMachineId")
        default: return FuzzCall(path: UA.managerPath, interface: nil, member: input.pick(["Search", "GetManagedObjects", "Introspect", "Get"]),
                                 arguments: input.chance(50) ? [] : [.string("x"), .stringVariantDictionary([])], shape: "no interface")
        }
    }

    // MARK: Arguments by meaning

    /// An argument of `signature` for the parameter `name`: usually shaped
    /// like a real one, sometimes any value of the type.
    mutating func argument(_ name: String, _ signature: String, method: String, savedIDs: [String]) -> TypedValue {
        // A continuation waits up to its timeout-ms (10 s by default): its options always set a short one.
        if name == "options" && method.hasPrefix("Continue") { return .stringVariantDictionary(options(for: method)) }
        if input.chance(10) { return values.value(of: signature, &input) }
        switch name {
        case "activity_type": return .string(input.chance(3) ? String(repeating: "a.", count: input.int(100...5000)) + "b" : input.pick(Self.types))
        case "properties", "entries": return .stringVariantDictionary(properties(appIDClaim: method != "AddUserInfoEntries"))
        case "options": return .stringVariantDictionary(options(for: method))
        case "query": return .string(input.chance(5) ? String(repeating: "quer ", count: input.int(1...40_000)) : values.string(&input))
        case "saved_id": return .string(savedIDs.isEmpty || input.chance(30) ? values.string(&input) : input.pick(savedIDs))
        case "app_id": return .string(input.pick(Self.apps))
        case "handler": return .objectPath(values.objectPath(&input))
        case "persistent_identifiers": return .stringArray((0..<input.int(0...5)).map { _ in "doc-\(input.int(0...20))" })
        case "from_usec", "to_usec": return .int64(input.pick([0, -1, Int64.max, Int64.min, nowMicroseconds()]))
        default: return values.value(of: signature, &input)
        }
    }

    /// A properties argument: the generators of the parser fuzzer, an app-id
    /// claim, and now and then the extremes (absurd dictionaries, the
    /// deepest nesting libdbus sends, huge values).
    mutating func properties(appIDClaim: Bool) -> [(String, TypedValue)] {
        var entries = ParserProperties.propertyEntries(&input, values: values)
        if appIDClaim && input.chance(70) { entries.insert(("app-id", .string(input.pick(Self.apps))), at: 0) }
        switch input.int(0...30) {
        case 0: entries = []
        case 1: entries.append(("user-info", .stringVariantDictionary((0..<input.int(1000...20_000)).map { ("k\($0)", .byte(1)) })))
        case 2: entries.append(("user-info", .stringVariantDictionary([("deep", Self.deepest(input.int(0...3)))])))
        case 3: entries.append(("title", .string(String(repeating: "T", count: input.int(1...1_000_000)))))
        case 4: entries.append((String(repeating: "k", count: input.int(1000...100_000)), .boolean(true)))
        case 5: entries += (0..<input.int(100...3000)).map { _ in ("keywords", .stringArray([])) }
        case 6: entries.append(("user-info", .stringVariantDictionary([("fd", .unixFD(fileDescriptor))])))
        default: break
        }
        return entries
    }

    /// Values at the nesting limits of the D-Bus specification (32 arrays,
    /// 32 structures, 64 containers in all with variants), inside a variant
    /// of a dictionary entry (which already takes 2 of the 64).
    static func deepest(_ kind: Int) -> TypedValue {
        var value = TypedValue.int32(7)
        switch kind {
        case 0:
            for _ in 0..<31 { value = .array(elementType: value.signature, [value]) }
        case 1:
            for _ in 0..<30 { value = .structure([value]) }
        case 2:
            for _ in 0..<58 { value = .variant(value) }
        default:
            // Alternating array and variant: the signature stays short, the depth does not.
            for level in 0..<58 { value = level % 2 == 0 ? .array(elementType: value.signature, [value]) : .variant(value) }
        }
        return value
    }

    mutating func options(for method: String) -> [(String, TypedValue)] {
        var entries: [(String, TypedValue)] = []
        let known: [String: String] = method.hasPrefix("Continue") || method == "Continue"
            ? ["target-app-id": "s", "timeout-ms": "u", "activation-token": "s", "desktop-startup-id": "s"]
            : ["limit": "u", "app-id": "s", "activity-types": "as"]
        for _ in 0..<input.int(0...4) {
            let key = input.chance(85) ? input.pick(known.keys.sorted()) : input.pick(["", "x", "Limit", "timeout"])
            var value = input.chance(80) && known[key] != nil ? values.value(of: known[key]!, &input) : values.value(&input)
            if key == "app-id" || key == "target-app-id", input.chance(70) { value = .string(input.pick(Self.apps)) }
            entries.append((key, value))
        }
        if method.hasPrefix("Continue") || method == "Continue" {
            // A continuation may wait for its timeout: keep them short so the fuzzer keeps moving.
            entries.removeAll { $0.0 == "timeout-ms" }
            entries.append(("timeout-ms", .uint32(UInt32(input.int(1...800)))))
        }
        return entries
    }

    mutating func activityPath(_ livePaths: [String]) -> String {
        if !livePaths.isEmpty && input.chance(75) { return input.pick(livePaths) }
        return UA.activityPrefix + String(input.int(0...5000))
    }

    /// An element of an interface name (two of them stay under the 255-byte limit).
    mutating func shortName() -> String {
        String(input.pick(Array("abcXYZ_"))) + String((0..<input.int(0...20)).map { _ in input.pick(Array("abcXYZ_019")) })
    }

    /// A valid member name (libdbus refuses to send any other).
    mutating func memberName() -> String {
        let first = Array("abcXYZ_")
        let rest = Array("abcXYZ_019")
        let length = input.chance(3) ? input.int(200...255) : input.int(1...12)
        return String(input.pick(first)) + String((1..<length).map { _ in input.pick(rest) })
    }
}
