// SPDX-License-Identifier: Apache-2.0

/// What a DNS-SD announcement of `_useractivity._tcp` says, and what to do about it.
///
/// TXT keys while the device is Discoverable: `id` (the DeviceId) and `name`
/// (the DeviceName). Otherwise only `r`, a ``ResolvableToken`` that only
/// paired devices can tell apart from random, new at each start and every
/// ``PrivacyRotation/intervalSeconds``.
public enum DiscoveryDecision {
    public struct Found: Sendable, Equatable {
        public var host: String
        public var port: UInt16
        public var txt: [String: String]
        public init(host: String, port: UInt16, txt: [String: String]) {
            self.host = host
            self.port = port
            self.txt = txt
        }
        public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
        /// Whose announcement this is: the `id` of a discoverable device, or
        /// the paired device whose resolving key made the token.
        public var deviceID: String? { txt["id"].flatMap { Hex.isDeviceID($0) ? $0 : nil } ?? resolvedID }
        /// Set by whoever resolved ``token`` against the resolving keys it holds.
        public var resolvedID: String?
        /// The rotating token of a device that is not discoverable.
        public var token: String? {
            txt["r"].flatMap { $0.utf8.count == ResolvableToken.length && Hex.decode($0) != nil ? $0 : nil }
        }
        public var isDiscoverable: Bool { !(txt["name"] ?? "").isEmpty }
    }

    public enum Action: Sendable, Equatable {
        case ignore
        /// Connect: a paired device came back (perhaps at a new address), or
        /// a discoverable one appeared and this device may pair with it.
        case dial(address: String)
    }

    /// - Parameters:
    ///   - ownID: this device (its own announcement is ignored).
    ///   - paired: ids of paired devices; `reachable`: ids with a link up.
    ///   - mayPair: this device is Discoverable or a pairing agent is
    ///     registered. Dialing an unpaired device shows it this device's key
    ///     and name, so it is done only while a person could be pairing,
    ///     not for anything that calls itself discoverable.
    public static func action(for found: Found, ownID: String, paired: Set<String>, reachable: Set<String>, mayPair: Bool = true) -> Action {
        guard found.port > 0, !found.host.isEmpty, let id = found.deviceID, id != ownID, !reachable.contains(id) else { return .ignore }
        if paired.contains(id) || (found.isDiscoverable && mayPair) { return .dial(address: found.address) }
        return .ignore
    }

    /// The TXT record this device publishes: nothing stable while it is not discoverable.
    public static func txt(deviceID: String, name: String, discoverable: Bool, token: String) -> [String: String] {
        discoverable ? ["id": deviceID, "name": name] : ["r": token]
    }
}
