// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TypedValues

/// Builds the same signal many times with libdbus's append iterators
/// (`Message.append`), so `bench/callgrind-libcompare.sh` can count its
/// instructions under callgrind (the figures that retired `WireEncoder` are
/// in docs/architecture.md). The arguments are made once, outside the counted
/// loop; "empty" builds an argument-less signal, the fixed cost of any.
enum EncodeBench {
    static let usage = "useractivity-bench --encode iterators|empty properties-changed|interfaces-added|large COUNT"

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let count = Int(arguments[2]), count >= 0,
              let message = Self.message(named: arguments[1]) else {
            note(usage)
            return 2
        }
        let path = "/org/example/UserActivity/activity/7f3c2a9e"
        do {
            for _ in 0..<count {
                switch arguments[0] {
                case "iterators":
                    let signal = Message.signal(path: path, interface: message.interface, member: message.member)
                    try signal.append(message.arguments)
                case "empty":
                    _ = Message.signal(path: path, interface: message.interface, member: message.member)
                default:
                    note(usage)
                    return 2
                }
            }
        } catch {
            note("useractivity-bench --encode: \(error)")
            return 1
        }
        return 0
    }

    private static func variants(_ pairs: [(String, TypedValue)]) -> TypedValue {
        .dictionary(keyType: "s", valueType: "v", pairs.map { .init(key: .string($0.0), value: .variant($0.1)) })
    }

    /// An activity's properties as the daemon publishes them; `largeUserInfo`
    /// adds 400 entries (~56 KiB), as `bench/callgrind-donate.sh --large` does.
    private static func activityProperties(largeUserInfo: Bool) -> TypedValue {
        var userInfo: [(String, TypedValue)] = [
            ("document-uri", .string("file:///home/user/Documents/quarterly-budget-review.odt")),
            ("page", .uint32(3)),
            ("selection", .structure([.int32(1204), .int32(1348)])),
            ("zoom", .double(1.25)),
        ]
        if largeUserInfo {
            for k in 0..<400 {
                let padded = String(repeating: "0", count: 3 - String(k).count) + String(k)
                userInfo.append(("field-\(padded)", .string(String(repeating: "value \(padded) ", count: 11))))
            }
        }
        return variants([
            ("ActivityType", .string("com.example.Editor.edit-document")),
            ("AppId", .string("com.example.Editor")),
            ("Title", .string("Quarterly budget review notes for the finance team")),
            ("UserInfo", variants(userInfo)),
            ("RequiredUserInfoKeys", .array(elementType: "s", [.string("document-uri")])),
            ("Keywords", .array(elementType: "s", [.string("budget"), .string("finance"), .string("quarterly")])),
            ("ContentDescription", .string("Draft with regional figures")),
            ("ContentAttributes", variants([])),
            ("WebpageURL", .string("https://docs.example.com/d/quarterly-budget-review")),
            ("ReferrerURL", .string("")),
            ("TargetContentIdentifier", .string("")),
            ("PersistentIdentifier", .string("quarterly-budget-review-7f3c2a9e")),
            ("ExpirationDate", .int64(0)),
            ("EligibleForHandoff", .boolean(true)),
            ("EligibleForSearch", .boolean(true)),
            ("EligibleForPublicIndexing", .boolean(false)),
            ("EligibleForPrediction", .boolean(false)),
            ("SuggestedInvocationPhrase", .string("")),
            ("NeedsSave", .boolean(false)),
            ("SupportsContinuationStreams", .boolean(false)),
            ("Current", .boolean(true)),
        ])
    }

    private static func message(named name: String) -> (interface: String, member: String, arguments: [TypedValue])? {
        let activityInterface = "org.example.UserActivity.Activity"
        switch name {
        case "properties-changed":
            // What an Update of the title and the user-info emits.
            let changed = variants([
                ("Title", .string("Quarterly budget review notes for the finance team")),
                ("UserInfo", variants([
                    ("document-uri", .string("file:///home/user/Documents/quarterly-budget-review.odt")),
                    ("page", .uint32(4)),
                    ("selection", .structure([.int32(1204), .int32(1348)])),
                    ("zoom", .double(1.25)),
                ])),
            ])
            return ("org.freedesktop.DBus.Properties", "PropertiesChanged",
                    [.string(activityInterface), changed, .array(elementType: "s", [])])
        case "interfaces-added", "large":
            let interfaces = TypedValue.dictionary(keyType: "s", valueType: "a{sv}", [
                .init(key: .string(activityInterface), value: activityProperties(largeUserInfo: name == "large")),
                .init(key: .string("org.freedesktop.DBus.Properties"), value: variants([])),
                .init(key: .string("org.freedesktop.DBus.Introspectable"), value: variants([])),
            ])
            return ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded",
                    [.objectPath("/org/example/UserActivity/activity/7f3c2a9e"), interfaces])
        default:
            return nil
        }
    }
}
