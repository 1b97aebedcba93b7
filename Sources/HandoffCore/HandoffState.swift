// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// A device this one knows: added with AddPeer, or paired (its key pinned).
public struct KnownDevice: Sendable, Equatable {
    public var id: String
    public var name: String
    public var address: String
    public var paired: Bool
    /// Unpaired here while it was unreachable: it is told when it comes back.
    public var tellUnpair: Bool
    /// The secret of this pair (``LinkProof``), empty for a device paired
    /// before devices exchanged one.
    public var linkSecret: [UInt8]
    /// The device's resolving key (``ResolvableToken``), empty when not known.
    public var resolvingKey: [UInt8]
    public init(id: String, name: String = "", address: String = "", paired: Bool = false, tellUnpair: Bool = false,
                linkSecret: [UInt8] = [], resolvingKey: [UInt8] = []) {
        self.id = id
        self.name = name
        self.address = address
        self.paired = paired
        self.tellUnpair = tellUnpair
        self.linkSecret = linkSecret
        self.resolvingKey = resolvingKey
    }
}

/// Settings and pins, kept in `peers.ini` in a key-file form:
///
/// ```
/// [Handoff]
/// Enabled=true
/// DeviceName=Laptop
/// [Peer 127.0.0.1:4000]
/// [Device 0a1b…]
/// Name=Desk
/// Address=192.0.2.4:4000
/// Paired=true
/// ```
public struct HandoffState: Sendable, Equatable {
    public var enabled = false
    /// Empty: the pretty host name.
    public var deviceName = ""
    /// The id of the key made on first enable: a missing key afterwards is an error, not a new identity.
    public var deviceID = ""
    public var discoverableTimeout: UInt32 = 120
    public var notifyContinuable = true
    /// The largest document sent to or taken from a paired device, in bytes.
    public var maximumFileSize: UInt64 = FileTransferLimits.defaultMaximumSize
    /// This device's resolving key, given to every device it pairs with
    /// (empty until first needed).
    public var resolvingKey: [UInt8] = []
    /// `host:port` added with AddPeer whose key is not known yet.
    public var pendingPeers: [String] = []
    public var devices: [String: KnownDevice] = [:]

    public init() {}

    public func serialized() -> String {
        var out = "# useractivity-handoffd state: settings and pinned device keys\n[Handoff]\n"
        out += "Enabled=\(enabled)\nDeviceName=\(Self.escape(deviceName))\nDeviceId=\(deviceID)\n"
        out += "DiscoverableTimeout=\(discoverableTimeout)\nNotifyContinuable=\(notifyContinuable)\n"
        out += "MaximumFileSize=\(maximumFileSize)\n"
        if !resolvingKey.isEmpty { out += "ResolvingKey=\(Hex.encode(resolvingKey))\n" }
        for peer in pendingPeers.sorted() { out += "\n[Peer \(Self.escape(peer))]\n" }
        for device in devices.values.sorted(by: { $0.id < $1.id }) {
            out += "\n[Device \(device.id)]\nName=\(Self.escape(device.name))\nAddress=\(Self.escape(device.address))\nPaired=\(device.paired)\n"
            if device.tellUnpair { out += "TellUnpair=true\n" }
            if !device.linkSecret.isEmpty { out += "LinkSecret=\(Hex.encode(device.linkSecret))\n" }
            if !device.resolvingKey.isEmpty { out += "ResolvingKey=\(Hex.encode(device.resolvingKey))\n" }
        }
        return out
    }

    /// Parses what ``serialized()`` wrote; unknown keys and malformed lines
    /// are skipped with a warning, a device group whose id is not a SHA-256 too.
    public static func parse(_ text: String) -> (state: HandoffState, warnings: [String]) {
        var state = HandoffState()
        var warnings: [String] = []
        var group = ""
        var device: KnownDevice?
        func flush() {
            if let device { state.devices[device.id] = device }
            device = nil
        }
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                flush()
                group = String(line.dropFirst().dropLast())
                if group.hasPrefix("Device ") {
                    let id = String(group.dropFirst("Device ".count))
                    if Hex.isDeviceID(id) { device = KnownDevice(id: id) } else {
                        warnings.append("line \(number + 1): device id '\(id)' is not a SHA-256: skipped")
                        group = ""
                    }
                } else if group.hasPrefix("Peer ") {
                    state.pendingPeers.append(unescape(String(group.dropFirst("Peer ".count))))
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                warnings.append("line \(number + 1): not a key=value line: skipped")
                continue
            }
            let key = String(line[..<equals])
            let value = unescape(String(line[line.index(after: equals)...]))
            if group == "Handoff" {
                switch key {
                case "Enabled": state.enabled = value == "true"
                case "DeviceName": state.deviceName = value
                case "DeviceId": state.deviceID = Hex.isDeviceID(value) ? value : ""
                case "DiscoverableTimeout": state.discoverableTimeout = UInt32(value) ?? 120
                case "NotifyContinuable": state.notifyContinuable = value != "false"
                case "MaximumFileSize": state.maximumFileSize = UInt64(value) ?? FileTransferLimits.defaultMaximumSize
                case "ResolvingKey": state.resolvingKey = secret(value, number, &warnings)
                default: warnings.append("line \(number + 1): unknown key \(key)")
                }
            } else if device != nil {
                switch key {
                case "Name": device!.name = value
                case "Address": device!.address = value
                case "Paired": device!.paired = value == "true"
                case "TellUnpair": device!.tellUnpair = value == "true"
                case "LinkSecret": device!.linkSecret = secret(value, number, &warnings)
                case "ResolvingKey": device!.resolvingKey = secret(value, number, &warnings)
                default: warnings.append("line \(number + 1): unknown key \(key)")
                }
            }
        }
        flush()
        return (state, warnings)
    }

    /// 32 bytes in hex, or none (with a warning).
    static func secret(_ value: String, _ number: Int, _ warnings: inout [String]) -> [UInt8] {
        guard value.utf8.count == 2 * LinkProof.secretBytes, let bytes = Hex.decode(value) else {
            warnings.append("line \(number + 1): not a 32-byte hex secret: skipped")
            return []
        }
        return bytes
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "]": out += "\\]"
            default: out.append(character)
            }
        }
        return out
    }

    static func unescape(_ text: String) -> String {
        var out = ""
        var escaping = false
        for character in text {
            if escaping {
                switch character {
                case "n": out += "\n"
                case "r": out += "\r"
                default: out.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}

/// A failure reading or writing the state directory.
public struct StateFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The daemon's directory: `$XDG_STATE_HOME/useractivity/handoff/` (0700),
/// files 0600, written atomically (a temporary file, fsync, rename).
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `$XDG_STATE_HOME/useractivity/handoff`, default `~/.local/state/useractivity/handoff`.
    public static func resolve(environment: [String: String]) -> StateDirectory? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return StateDirectory(path: state + "/useractivity/handoff")
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return StateDirectory(path: home + "/.local/state/useractivity/handoff")
    }

    /// Creates the directory and its parents; tightens it to 0700.
    public func create() throws(StateFileError) {
        var partial = ""
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw StateFileError("cannot create \(partial): \(String(cString: strerror(errno)))")
            }
        }
        if chmod(path, 0o700) != 0 {
            throw StateFileError("cannot make \(path) private: \(String(cString: strerror(errno)))")
        }
    }

    public func file(_ name: String) -> String { path + "/" + name }

    /// Makes the directory (0700) and the files in it (0600) private again
    /// when something loosened them, as ssh would insist; returns one warning
    /// per change (empty when all was private or nothing exists yet). The
    /// key is still used: refusing would turn Handoff off for a mode the
    /// daemon can repair, while the key may already have been read by others,
    /// which the warning says.
    public func tightenModes(files: [String]) -> [String] {
        var warnings: [String] = []
        func tighten(_ target: String, to mode: mode_t) {
            var info = stat()
            guard lstat(target, &info) == 0, (info.st_mode & S_IFMT) != S_IFLNK, info.st_mode & 0o077 != 0 else { return }
            let was = String(info.st_mode & 0o777, radix: 8)
            if chmod(target, mode) == 0 {
                warnings.append("\(target) was readable by others (mode \(was)); made it \(String(mode, radix: 8)). If others could read it, consider ResetIdentity.")
            } else {
                warnings.append("\(target) is readable by others (mode \(was)) and cannot be changed: \(String(cString: strerror(errno)))")
            }
        }
        tighten(path, to: 0o700)
        for name in files { tighten(file(name), to: 0o600) }
        return warnings
    }

    public func exists(_ name: String) -> Bool { access(file(name), F_OK) == 0 }

    /// The file's bytes, nil when it does not exist.
    public func read(_ name: String) throws(StateFileError) -> [UInt8]? {
        let fd = open(file(name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw StateFileError("cannot read \(file(name)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StateFileError("cannot read \(file(name)): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            out += chunk[0..<count]
            if out.count > 4 * 1024 * 1024 { throw StateFileError("\(file(name)) is larger than 4 MiB") }
        }
        return out
    }

    /// Replaces the file atomically with mode 0600.
    public func write(_ name: String, _ bytes: [UInt8]) throws(StateFileError) {
        try create()
        let target = file(name)
        let temporary = target + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateFileError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw StateFileError("cannot write \(temporary): \(reason)")
            }
            offset += written
        }
        fchmod(fd, 0o600)
        let synced = fsync(fd)
        close(fd)
        guard synced == 0, rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw StateFileError("cannot replace \(target): \(reason)")
        }
    }

    public func remove(_ name: String) { unlink(file(name)) }

    public func loadState() throws(StateFileError) -> (state: HandoffState, warnings: [String]) {
        guard let bytes = try read("peers.ini") else { return (HandoffState(), []) }
        return HandoffState.parse(String(decoding: bytes, as: UTF8.self))
    }

    public func save(_ state: HandoffState) throws(StateFileError) {
        try write("peers.ini", Array(state.serialized().utf8))
    }
}
