// SPDX-License-Identifier: Apache-2.0

/// Which incoming connections handoffd keeps while they authenticate (TLS
/// handshake and hello), so that strangers on the LAN cannot use up its
/// descriptors or its handshake threads, and a paired device still gets in
/// while they try.
///
/// Connections are counted by *address group*: an IPv4 address, or the /64
/// prefix of an IPv6 address (one host picks addresses from its /64 at will).
/// Two caps hold: ``Limits/perGroup`` connections of one group and
/// ``Limits/total`` in all. A newcomer over a cap does not simply lose to
/// the connections already waiting (a stranger who got there first would
/// then keep a paired device out for as long as it likes):
///
/// - its group is at its cap: the group's oldest waiting connection goes;
/// - all slots are taken: the oldest connection of the group that holds the
///   most slots goes, if that group holds more than the newcomer's; groups
///   where a paired device was last seen go last, and a newcomer from one
///   may take the slot of any other group;
/// - otherwise (the newcomer's group already holds as many as any) it is refused.
///
/// So slots are shared fairly between addresses, and a connection from an
/// address of its own — a paired device's — is always admitted and keeps its
/// slot until every other group holds at most as many as its own; a genuine
/// handshake takes milliseconds, the deadline ten seconds.
public struct ConnectionAdmission: Sendable {
    public struct Limits: Sendable, Equatable {
        public var total: Int
        public var perGroup: Int
        public init(total: Int, perGroup: Int) {
            self.total = total
            self.perGroup = perGroup
        }
        public static let standard = Limits(total: 64, perGroup: 8)
    }

    /// A connection that has not authenticated yet.
    public struct Waiting: Sendable, Equatable {
        public var id: Int
        public var group: String
        /// When it was accepted (any increasing measure); smaller is older.
        public var since: Int64
        public init(id: Int, group: String, since: Int64) {
            self.id = id
            self.group = group
            self.since = since
        }
    }

    public enum Decision: Sendable, Equatable {
        case admit
        /// Admit after closing the connection with this id.
        case admitEvicting(id: Int, reason: String)
        case refuse(reason: String)
    }

    public var limits: Limits
    public init(limits: Limits = .standard) { self.limits = limits }

    /// What to do with a new connection from `group`, given those waiting.
    /// `preferred`: the groups where paired devices were last seen.
    public func decide(group: String, waiting: [Waiting], preferred: Set<String> = []) -> Decision {
        var counts: [String: Int] = [:]
        var oldest: [String: Waiting] = [:]
        for connection in waiting {
            counts[connection.group, default: 0] += 1
            if let current = oldest[connection.group], current.since <= connection.since { continue }
            oldest[connection.group] = connection
        }
        let own = counts[group] ?? 0
        if own >= limits.perGroup, let victim = oldest[group] {
            return .admitEvicting(id: victim.id, reason: "\(own) connections from \(group) are still authenticating")
        }
        if waiting.count < limits.total { return .admit }
        // The group most worth evicting from: not preferred, then the most slots, then the oldest connection.
        func rank(_ group: String) -> (Int, Int) { (preferred.contains(group) ? 0 : 1, counts[group] ?? 0) }
        let candidates = counts.keys.filter { $0 != group && rank($0) > rank(group) }
        let victimGroup = candidates.max { left, right in
            let (l, r) = (rank(left), rank(right))
            if l != r { return l < r }
            return (oldest[left]?.since ?? .max) > (oldest[right]?.since ?? .max)
        }
        guard let victimGroup, let victim = oldest[victimGroup] else {
            return .refuse(reason: "\(waiting.count) connections are still authenticating, \(own) of them from \(group)")
        }
        return .admitEvicting(id: victim.id, reason: "\(waiting.count) connections are still authenticating, \(counts[victimGroup] ?? 0) of them from \(victimGroup)")
    }

    /// Server handshakes running at once. GIO runs each on a thread of
    /// GLib's pool (ten threads, grown slowly when they are all blocked),
    /// and a stranger that sends a ClientHello and then nothing holds its
    /// thread until closed; with more of those than the pool has threads,
    /// a paired device's handshake would queue behind them.
    public static let handshakesAtOnce = 8

    /// With every handshake slot taken, the handshake to stop for a new
    /// one: the oldest, not of a paired device's group if there is another.
    /// A genuine handshake takes milliseconds; the oldest running one is the
    /// likeliest to be a stranger's that stopped halfway. Nil while a slot is free.
    public static func handshakeToStop(running: [Waiting], preferred: Set<String> = [], slots: Int = handshakesAtOnce) -> Int? {
        guard running.count >= slots else { return nil }
        let strangers = running.filter { !preferred.contains($0.group) }
        return (strangers.isEmpty ? running : strangers).min { $0.since < $1.since }?.id
    }

    /// The group of a host (an address without its port, IPv6 with or
    /// without brackets): an IPv4 address itself (also when IPv4-mapped),
    /// the /64 prefix of an IPv6 address, anything else unchanged.
    public static func group(ofHost host: String) -> String {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        guard text.contains(":") else { return String(text) }
        let lowered = text.lowercased()
        if lowered.hasPrefix("::ffff:"), !lowered.dropFirst(7).contains(":") { return String(lowered.dropFirst(7)) }
        guard let words = ipv6Words(lowered) else { return String(text) }
        return words.prefix(4).map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// The eight 16-bit words of an IPv6 address, or nil when it is not one.
    static func ipv6Words(_ text: String) -> [UInt16]? {
        var halves = [Substring(text)]
        if let gap = text.firstRange(of: "::") {
            halves = [text[..<gap.lowerBound], text[gap.upperBound...]]
            if halves[1].contains("::") { return nil }
        }
        func words(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    let bytes = piece.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
                    guard bytes.count == 4 else { return nil }
                    result += [UInt16(bytes[0]) << 8 | UInt16(bytes[1]), UInt16(bytes[2]) << 8 | UInt16(bytes[3])]
                    continue
                }
                guard (1...4).contains(piece.count), let word = UInt16(piece, radix: 16) else { return nil }
                result.append(word)
            }
            return result
        }
        guard let head = words(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 8 ? head : nil }
        guard let tail = words(halves[1]), head.count + tail.count < 8 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }
}

/// Pausing `accept` when the process has no descriptor left (`EMFILE`,
/// `ENFILE`): the listening socket stays readable, so accepting again at once
/// would spin and fail again. Each failure in a row doubles the pause, up to
/// ``maximumMilliseconds``; an accepted connection starts again from
/// ``initialMilliseconds``. One log line per pause, not one per failure.
public struct AcceptBackoff: Sendable, Equatable {
    public static let initialMilliseconds: UInt32 = 250
    public static let maximumMilliseconds: UInt32 = 4000
    public private(set) var pauses = 0
    private var nextMilliseconds = AcceptBackoff.initialMilliseconds

    public init() {}

    /// An accept failed for lack of descriptors: how long to stop accepting.
    public mutating func failed() -> UInt32 {
        pauses += 1
        let pause = nextMilliseconds
        nextMilliseconds = min(nextMilliseconds * 2, Self.maximumMilliseconds)
        return pause
    }

    /// A connection was accepted: the next shortage starts from the shortest pause.
    public mutating func succeeded() {
        nextMilliseconds = Self.initialMilliseconds
    }
}
