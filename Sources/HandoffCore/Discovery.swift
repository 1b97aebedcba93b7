// SPDX-License-Identifier: Apache-2.0

/// What a DNS-SD announcement of `_useractivity._tcp` says, and what to do about it.
///
/// TXT keys: `id` (the DeviceId, always), `name` (the DeviceName, only while
/// the device is Discoverable).
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
        public var deviceID: String? { txt["id"].flatMap { Hex.isDeviceID($0) ? $0 : nil } }
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
    public static func action(for found: Found, ownID: String, paired: Set<String>, reachable: Set<String>) -> Action {
        guard found.port > 0, !found.host.isEmpty, let id = found.deviceID, id != ownID, !reachable.contains(id) else { return .ignore }
        if paired.contains(id) || found.isDiscoverable { return .dial(address: found.address) }
        return .ignore
    }

    /// The TXT record this device publishes.
    public static func txt(deviceID: String, name: String, discoverable: Bool) -> [String: String] {
        discoverable ? ["id": deviceID, "name": name] : ["id": deviceID]
    }
}
