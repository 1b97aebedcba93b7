// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The limits of the spec, in one place so tests and messages agree.
public struct ActivityLimits: Sendable {
    public var maximumUserInfoBytes = 64 * 1024
    public var maximumContentAttributesBytes = 64 * 1024
    public var maximumTitleBytes = 1024
    public var maximumKeywordBytes = 1024
    public var maximumKeywords = 64
    /// Any other text field (descriptions, URLs, identifiers, phrases).
    public var maximumTextBytes = 64 * 1024
    public var maximumLiveActivitiesPerConnection = 256
    /// A session-wide cap so that many connections cannot exhaust memory.
    public var maximumLiveActivities = 8192
    /// Continuations in flight (Continue calls not yet answered) per caller
    /// connection and in the session; each holds state until it ends.
    public var maximumPendingContinuationsPerConnection = 64
    public var maximumPendingContinuations = 1024
    /// How deep user-info and content-attributes may nest, counted as D-Bus
    /// counts (each array, dictionary entry, structure and variant is a
    /// level; the `a{sv}` itself is two). The service wraps them in up to 7
    /// more levels (GetManagedObjects) and D-Bus refuses messages deeper than
    /// 64: the bus would disconnect the service for sending one.
    public var maximumNestingDepth = 48
    /// Decides whether a `webpage-url` (`webOnly`: an http(s) URL with a
    /// host) or `referrer-url` (any absolute URL) is well-formed. The service
    /// puts GLib's parser here (`GLibURI.isValid`: `g_uri_parse`, strict);
    /// this module has no GLib, so the default is ``URLSyntax``'s own check.
    public var isValidURL: @Sendable (_ text: String, _ webOnly: Bool) -> Bool = { URLSyntax.isValid($0, webOnly: $1) }

    /// Each required-user-info-keys entry, and how many there may be.
    public var maximumRequiredUserInfoKeys = 256
    public var maximumRequiredUserInfoKeyBytes = 1024
    /// One activity's data in all (``ActivityProperties/dataBytes``): every
    /// field has its own limit, but together they would allow ~450 KB.
    public var maximumActivityBytes = 256 * 1024

    // Per-app shares of the session-wide caps. A sandboxed app (Flatpak,
    // Snap) gets at most its share over any number of connections;
    // unconfined callers (the shell, the CLI, host apps) are held by the
    // per-connection limits and the session caps only.

    /// A sandboxed app's live activities, of ``maximumLiveActivities``.
    public var maximumLiveActivitiesPerApp = 1024
    /// A sandboxed app's continuations in flight, of ``maximumPendingContinuations``.
    public var maximumPendingContinuationsPerApp = 128

    /// Bytes of live activity data held in memory (``ActivityProperties/heldBytes``) per
    /// app, whoever created them, and in the session.
    public var maximumLiveActivityBytesPerApp = 16 * 1024 * 1024
    public var maximumLiveActivityBytes = 256 * 1024 * 1024

    /// App launches (desktop entries and browsers for webpage-url) per app:
    /// a token bucket of ``launchBurstPerApp`` refilled at one launch per
    /// ``launchIntervalMicroseconds``.
    public var launchBurstPerApp = 10
    public var launchIntervalMicroseconds: Int64 = 1_000_000

    /// A sandboxed app's donations (`Donate`): a token bucket of
    /// ``donationBurstPerApp`` refilled at one donation per
    /// ``donationIntervalMicroseconds`` (50 a second), over all its
    /// connections. Each donation is a durable write that every caller's
    /// next save and search waits behind, so one app flooding them would
    /// hold up the others. Unconfined callers are not counted: the shell,
    /// the bridges and host apps are trusted as the user.
    public var donationBurstPerApp = 200
    public var donationIntervalMicroseconds: Int64 = 20_000

    public init() {}
    public static let standard = ActivityLimits()
}

/// The data of one activity (everything but its type, owner and current flag).
public struct ActivityProperties: Sendable, Equatable {
    public var title = ""
    /// In insertion order; keys are unique.
    public var userInfo: [(key: String, value: TypedValue)] = []
    public var requiredUserInfoKeys: [String] = []
    public var keywords: [String] = []
    public var contentDescription = ""
    public var contentAttributes: [(key: String, value: TypedValue)] = []
    public var webpageURL = ""
    public var referrerURL = ""
    public var targetContentIdentifier = ""
    public var persistentIdentifier = ""
    /// Unix time in microseconds; 0 = never.
    public var expirationDate: Int64 = 0
    public var eligibleForHandoff = true
    public var eligibleForSearch = false
    public var eligibleForPublicIndexing = false
    public var eligibleForPrediction = false
    public var suggestedInvocationPhrase = ""
    public var needsSave = false
    public var supportsContinuationStreams = false

    public init() {}

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.value(of: .userInfo).isIdentical(to: rhs.value(of: .userInfo))
            && lhs.value(of: .contentAttributes).isIdentical(to: rhs.value(of: .contentAttributes))
            && ActivityField.allCases.filter { ![.userInfo, .contentAttributes, .activityType, .appID, .current].contains($0) }
                .allSatisfy { lhs.value(of: $0) == rhs.value(of: $0) }
    }

    /// The value of a field as it appears on the bus (ActivityType, AppId and Current are the registry's).
    public func value(of field: ActivityField) -> TypedValue {
        switch field {
        case .title: return .string(title)
        case .userInfo: return .stringVariantDictionary(userInfo.map { ($0.key, $0.value) })
        case .requiredUserInfoKeys: return .stringArray(requiredUserInfoKeys)
        case .keywords: return .stringArray(keywords)
        case .contentDescription: return .string(contentDescription)
        case .contentAttributes: return .stringVariantDictionary(contentAttributes.map { ($0.key, $0.value) })
        case .webpageURL: return .string(webpageURL)
        case .referrerURL: return .string(referrerURL)
        case .targetContentIdentifier: return .string(targetContentIdentifier)
        case .persistentIdentifier: return .string(persistentIdentifier)
        case .expirationDate: return .int64(expirationDate)
        case .eligibleForHandoff: return .boolean(eligibleForHandoff)
        case .eligibleForSearch: return .boolean(eligibleForSearch)
        case .eligibleForPublicIndexing: return .boolean(eligibleForPublicIndexing)
        case .eligibleForPrediction: return .boolean(eligibleForPrediction)
        case .suggestedInvocationPhrase: return .string(suggestedInvocationPhrase)
        case .needsSave: return .boolean(needsSave)
        case .supportsContinuationStreams: return .boolean(supportsContinuationStreams)
        case .activityType, .appID, .current: return .string("")
        }
    }

    /// Whether `field` holds its default value (the value of a fresh
    /// `ActivityProperties()`), without building the `TypedValue`s that
    /// comparing `value(of:)` would.
    public func hasDefaultValue(_ field: ActivityField) -> Bool {
        switch field {
        case .title: return title.isEmpty
        case .userInfo: return userInfo.isEmpty
        case .requiredUserInfoKeys: return requiredUserInfoKeys.isEmpty
        case .keywords: return keywords.isEmpty
        case .contentDescription: return contentDescription.isEmpty
        case .contentAttributes: return contentAttributes.isEmpty
        case .webpageURL: return webpageURL.isEmpty
        case .referrerURL: return referrerURL.isEmpty
        case .targetContentIdentifier: return targetContentIdentifier.isEmpty
        case .persistentIdentifier: return persistentIdentifier.isEmpty
        case .expirationDate: return expirationDate == 0
        case .eligibleForHandoff: return eligibleForHandoff
        case .eligibleForSearch: return !eligibleForSearch
        case .eligibleForPublicIndexing: return !eligibleForPublicIndexing
        case .eligibleForPrediction: return !eligibleForPrediction
        case .suggestedInvocationPhrase: return suggestedInvocationPhrase.isEmpty
        case .needsSave: return !needsSave
        case .supportsContinuationStreams: return !supportsContinuationStreams
        case .activityType, .appID, .current: return true
        }
    }

    /// The user info trimmed to the required keys, when any are set (what saved copies keep).
    public var savedUserInfo: [(key: String, value: TypedValue)] {
        guard !requiredUserInfoKeys.isEmpty else { return userInfo }
        let required = Set(requiredUserInfoKeys)
        return userInfo.filter { required.contains($0.key) }
    }

    public func userInfoValue(_ key: String) -> TypedValue? {
        userInfo.first { $0.key == key }?.value
    }

    /// The size of the activity's data as counted against
    /// ``ActivityLimits/maximumActivityBytes`` and the per-app memory share:
    /// bytes of UTF-8 of every text field and list entry, plus the
    /// marshalled size of user-info and content-attributes.
    public var dataBytes: Int {
        var total = title.utf8.count + contentDescription.utf8.count + webpageURL.utf8.count + referrerURL.utf8.count
            + targetContentIdentifier.utf8.count + persistentIdentifier.utf8.count + suggestedInvocationPhrase.utf8.count
        for word in keywords { total += word.utf8.count }
        for key in requiredUserInfoKeys { total += key.utf8.count }
        if !userInfo.isEmpty { total += TypedValue.stringVariantDictionarySize(userInfo) }
        if !contentAttributes.isEmpty { total += TypedValue.stringVariantDictionarySize(contentAttributes) }
        return total
    }

    /// The memory the activity's data take in the daemon, as counted against
    /// the per-app and session memory shares: never less than ``dataBytes``,
    /// and more where the in-memory form outgrows the wire form (many small
    /// values in user-info or content-attributes, each an enum slot and
    /// perhaps a buffer of its own; see ``TypedValues/TypedValue/heldBytes``).
    public var heldBytes: Int {
        var total = title.utf8.count + contentDescription.utf8.count + webpageURL.utf8.count + referrerURL.utf8.count
            + targetContentIdentifier.utf8.count + persistentIdentifier.utf8.count + suggestedInvocationPhrase.utf8.count
        for word in keywords { total += word.utf8.count }
        for key in requiredUserInfoKeys { total += key.utf8.count }
        for (key, value) in userInfo { total += key.utf8.count + value.heldBytes }
        for (key, value) in contentAttributes { total += key.utf8.count + value.heldBytes }
        return max(total, dataBytes)
    }

    /// Whether a saved copy should be written when it becomes current.
    public var isSaveEligible: Bool { eligibleForSearch || eligibleForPrediction }
}

/// A validated set of changes: either every field applies or none.
public struct ActivityPatch: Sendable {
    public private(set) var changes: [(field: ActivityField, value: TypedValue)] = []
    /// The `app-id` claim of a properties argument, kept apart: it is not a property change.
    public private(set) var appIDClaim: String?

    public init() {}

    public var changedFields: [ActivityField] { changes.map(\.field) }
    public var isEmpty: Bool { changes.isEmpty }

    /// Parses an `a{sv}` properties argument. `allowsAppIDClaim` is true where
    /// the spec lets a caller name its app (create, become current, donate, update).
    public static func parse(_ entries: [(String, TypedValue)], allowsAppIDClaim: Bool) throws(UserActivityError) -> ActivityPatch {
        var patch = ActivityPatch()
        // Keys and fields correspond one to one, and an unknown key ends the
        // parse, so a repeated key is a repeated field (compared without hashing).
        var seen: [ActivityField] = []
        seen.reserveCapacity(entries.count)
        patch.changes.reserveCapacity(entries.count)
        for (key, value) in entries {
            guard let field = ActivityField(key: key) else {
                throw .invalidArgument("unknown key '\(key.prefix(200))' in the properties argument; known keys: \(ActivityField.knownKeys.joined(separator: ", "))")
            }
            guard !seen.contains(field) else {
                throw .invalidArgument("the key '\(key)' appears twice in the properties argument; give each key once")
            }
            seen.append(field)
            guard value.hasSignature(field.typeSignature) else {
                throw .invalidArgument("'\(key)' must have type '\(field.typeSignature)' but has '\(value.signature)'")
            }
            switch field {
            case .activityType:
                throw .invalidArgument("'activity-type' cannot be given in a properties argument: it is the separate activity_type argument and cannot change")
            case .appID:
                guard allowsAppIDClaim else {
                    throw .invalidArgument("'app-id' cannot be given here")
                }
                patch.appIDClaim = value.stringValue
            default:
                patch.changes.append((field, value))
            }
        }
        return patch
    }

    /// A patch that sets one property (for `org.freedesktop.DBus.Properties.Set`).
    public static func setting(propertyName: String, to value: TypedValue) throws(UserActivityError) -> ActivityPatch {
        guard let field = ActivityField(propertyName: propertyName) else {
            throw UserActivityError(.unknownProperty, "no property '\(propertyName.prefix(200))' on org.example.UserActivity.Activity")
        }
        guard field.isWritable else {
            throw UserActivityError(.propertyReadOnly, "the property \(propertyName) is read-only")
        }
        guard value.hasSignature(field.typeSignature) else {
            throw .invalidArgument("\(propertyName) must have type '\(field.typeSignature)' but the value has '\(value.signature)'")
        }
        var patch = ActivityPatch()
        patch.changes = [(field, value)]
        return patch
    }

    /// A patch that merges user-info entries (`AddUserInfoEntries`).
    public static func mergingUserInfo(_ entries: [(String, TypedValue)], into properties: ActivityProperties) throws(UserActivityError) -> ActivityPatch {
        var merged = properties.userInfo
        for (key, value) in entries {
            if let index = merged.firstIndex(where: { $0.key == key }) {
                merged[index].value = value
            } else {
                merged.append((key, value))
            }
        }
        var patch = ActivityPatch()
        patch.changes = [(.userInfo, .stringVariantDictionary(merged.map { ($0.key, $0.value) }))]
        return patch
    }

    /// Applies the patch to a copy of `properties`, validating every limit and
    /// rule on the result; throws without changing anything when one fails.
    public func applied(to properties: ActivityProperties, limits: ActivityLimits) throws(UserActivityError) -> ActivityProperties {
        var result = properties
        for (field, value) in changes {
            try Self.apply(field, value, to: &result, limits: limits)
        }
        try Self.checkRequiredKeys(result)
        if !changes.isEmpty {
            let size = result.dataBytes
            if size > limits.maximumActivityBytes {
                throw .limitExceeded("the activity's data are \(size) bytes in all (text fields, keywords and the marshalled user-info and content-attributes); at most \(limits.maximumActivityBytes) are allowed. Keep large data elsewhere and store a reference to it")
            }
        }
        return result
    }

    static func checkRequiredKeys(_ properties: ActivityProperties) throws(UserActivityError) {
        if properties.requiredUserInfoKeys.isEmpty { return }
        let present = Set(properties.userInfo.map(\.key))
        let missing = properties.requiredUserInfoKeys.filter { !present.contains($0) }
        if !missing.isEmpty {
            throw UserActivityError(.missingRequiredUserInfoKeys,
                                    "user-info lacks the required key(s) \(missing.map { "'\($0)'" }.joined(separator: ", ")); add them to user-info or remove them from required-user-info-keys")
        }
    }

    private static func text(_ value: TypedValue, _ field: ActivityField, limit: Int) throws(UserActivityError) -> String {
        let text = value.stringValue ?? ""
        if text.utf8.count > limit {
            throw .limitExceeded("\(field.key ?? field.propertyName) is \(text.utf8.count) bytes; at most \(limit) bytes of UTF-8 are allowed")
        }
        return text
    }

    /// File descriptors, object paths and signatures: meaningless once stored.
    private static let unstorableTypeCodes = Array("hog".utf8)

    private static func dictionary(_ value: TypedValue, _ field: ActivityField, limit: Int, depthLimit: Int,
                                   tooLarge: UserActivityError.Kind) throws(UserActivityError) -> [(key: String, value: TypedValue)] {
        guard let entries = value.stringVariantEntries else { return [] }
        // Hashing costs more than comparing a handful of keys.
        var seen = Set<String>()
        for (index, (key, inner)) in entries.enumerated() {
            let repeated = entries.count <= 8
                ? entries[..<index].contains { $0.0 == key }
                : !seen.insert(key).inserted
            guard !repeated else {
                throw .invalidArgument("\(field.key!) has the key '\(key.prefix(200))' twice")
            }
            if inner.contains(anyOf: Self.unstorableTypeCodes) {
                throw .invalidArgument("\(field.key!) entry '\(key.prefix(200))' has type '\(inner.signature)': file descriptors (h), object paths (o) and signatures (g) cannot be stored; use strings instead")
            }
        }
        let depth = nestingDepth(value)
        if depth > depthLimit {
            throw UserActivityError(tooLarge, "\(field.key!) nests \(depth) levels deep (each array, dictionary entry, structure and variant is one, the a{sv} itself two); at most \(depthLimit) are allowed")
        }
        let size = value.marshalledSize
        if size > limit {
            throw UserActivityError(tooLarge, "\(field.key!) is \(size) bytes when marshalled; at most \(limit) bytes are allowed. Keep large data elsewhere and store a reference to it")
        }
        return entries.map { (key: $0.0, value: $0.1) }
    }

    /// Nesting as D-Bus counts it towards its limit of 64.
    static func nestingDepth(_ value: TypedValue) -> Int {
        switch value {
        case .array(_, let elements): return 1 + (elements.lazy.map(nestingDepth).max() ?? 0)
        case .bytes: return 1
        case .dictionary(_, _, let entries):
            return 2 + (entries.lazy.map { max(nestingDepth($0.key), nestingDepth($0.value)) }.max() ?? 0)
        case .structure(let fields): return 1 + (fields.lazy.map(nestingDepth).max() ?? 0)
        case .variant(let inner): return 1 + nestingDepth(inner)
        default: return 0
        }
    }

    private static func url(_ value: TypedValue, _ field: ActivityField, webOnly: Bool, limit: Int,
                            isValidURL: (String, Bool) -> Bool) throws(UserActivityError) -> String {
        let text = try text(value, field, limit: limit)
        guard !text.isEmpty else { return text }
        guard isValidURL(text, webOnly) else {
            let expected = webOnly ? "an absolute http: or https: URL with a host, such as https://example.com/page" : "an absolute URL such as https://example.com/page"
            throw .invalidArgument("\(field.key!) '\(text.prefix(200))' is not \(expected)")
        }
        return text
    }

    private static func apply(_ field: ActivityField, _ value: TypedValue, to p: inout ActivityProperties, limits: ActivityLimits) throws(UserActivityError) {
        switch field {
        case .title: p.title = try text(value, field, limit: limits.maximumTitleBytes)
        case .userInfo:
            p.userInfo = try dictionary(value, field, limit: limits.maximumUserInfoBytes, depthLimit: limits.maximumNestingDepth, tooLarge: .userInfoTooLarge)
        case .contentAttributes:
            p.contentAttributes = try dictionary(value, field, limit: limits.maximumContentAttributesBytes, depthLimit: limits.maximumNestingDepth, tooLarge: .limitExceeded)
        case .requiredUserInfoKeys:
            let keys = value.stringArrayValue ?? []
            if keys.count > limits.maximumRequiredUserInfoKeys {
                throw .limitExceeded("required-user-info-keys has \(keys.count) keys; at most \(limits.maximumRequiredUserInfoKeys) are allowed")
            }
            for key in keys where key.utf8.count > limits.maximumRequiredUserInfoKeyBytes {
                throw .limitExceeded("a required-user-info-keys entry is \(key.utf8.count) bytes; each may have at most \(limits.maximumRequiredUserInfoKeyBytes) bytes of UTF-8")
            }
            p.requiredUserInfoKeys = keys
        case .keywords:
            let words = value.stringArrayValue ?? []
            if words.count > limits.maximumKeywords {
                throw .limitExceeded("keywords has \(words.count) entries; at most \(limits.maximumKeywords) are allowed")
            }
            for word in words where word.utf8.count > limits.maximumKeywordBytes {
                throw .limitExceeded("a keyword is \(word.utf8.count) bytes; each keyword may have at most \(limits.maximumKeywordBytes) bytes of UTF-8")
            }
            p.keywords = words
        case .contentDescription: p.contentDescription = try text(value, field, limit: limits.maximumTextBytes)
        case .webpageURL: p.webpageURL = try url(value, field, webOnly: true, limit: limits.maximumTextBytes, isValidURL: limits.isValidURL)
        case .referrerURL: p.referrerURL = try url(value, field, webOnly: false, limit: limits.maximumTextBytes, isValidURL: limits.isValidURL)
        case .targetContentIdentifier: p.targetContentIdentifier = try text(value, field, limit: limits.maximumTextBytes)
        case .persistentIdentifier: p.persistentIdentifier = try text(value, field, limit: limits.maximumTitleBytes)
        case .suggestedInvocationPhrase: p.suggestedInvocationPhrase = try text(value, field, limit: limits.maximumTitleBytes)
        case .expirationDate:
            let date = value.int64Value ?? 0
            if date < 0 { throw .invalidArgument("expiration-date must be Unix time in microseconds, or 0 for never; got \(date)") }
            p.expirationDate = date
        case .eligibleForHandoff: p.eligibleForHandoff = value.boolValue ?? true
        case .eligibleForSearch: p.eligibleForSearch = value.boolValue ?? false
        case .eligibleForPublicIndexing: p.eligibleForPublicIndexing = value.boolValue ?? false
        case .eligibleForPrediction: p.eligibleForPrediction = value.boolValue ?? false
        case .needsSave: p.needsSave = value.boolValue ?? false
        case .supportsContinuationStreams: p.supportsContinuationStreams = value.boolValue ?? false
        case .activityType, .appID, .current: break
        }
    }
}

/// Just enough URL syntax checking to refuse what no handler could open.
///
/// Works on Unicode scalars and bytes: `Character` iteration (grapheme
/// breaking) made this a tenth of CreateActivity's cost.
public enum URLSyntax {
    public static func isValid(_ text: String, webOnly: Bool) -> Bool {
        let checked: Bool? = text.utf8.withContiguousStorageIfAvailable { isValid(bytes: $0, text: text, webOnly: webOnly) }
        return checked ?? isValid(bytes: Array(text.utf8), text: text, webOnly: webOnly)
    }

    private static func isValid(bytes: some RandomAccessCollection<UInt8>, text: String, webOnly: Bool) -> Bool {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let scheme = bytes[..<colon]
        guard let first = scheme.first, isASCIILetter(first),
              scheme.allSatisfy({ isASCIILetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { return false }
        // Control characters, DEL and any Unicode white space (scalars only when there is non-ASCII text).
        var isASCII = true
        for byte in bytes {
            if byte <= 0x20 || byte == 0x7F { return false }
            if byte >= 0x80 { isASCII = false }
        }
        if !isASCII, text.unicodeScalars.contains(where: { $0.value >= 0x80 && $0.properties.isWhitespace }) {
            return false
        }
        let rest = bytes[bytes.index(after: colon)...]
        guard webOnly else { return !rest.isEmpty }
        guard equalsIgnoringASCIICase(scheme, "http") || equalsIgnoringASCIICase(scheme, "https") else { return false }
        guard rest.starts(with: [0x2F, 0x2F]) else { return false }
        let authority = rest.dropFirst(2).prefix { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }  // up to / ? #
        // The host: after the last @, before the first : that follows.
        let hostStart = authority.lastIndex(of: 0x40).map { authority.index(after: $0) } ?? authority.startIndex
        let hostAndPort = authority[hostStart...]
        let hostEnd = hostAndPort.firstIndex(of: 0x3A) ?? hostAndPort.endIndex
        return hostStart != hostEnd
    }

    private static func equalsIgnoringASCIICase(_ bytes: some Collection<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        var index = 0
        for byte in bytes {
            let folded = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            if folded != lowercase.utf8Start[index] { return false }
            index += 1
        }
        return true
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}
