// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// How a caller's process is sandboxed; decides whether its word about its
/// own identity counts.
public enum Confinement: Sendable, Equatable {
    /// Not sandboxed: any such process can do anything the user can, so its
    /// identity is advisory and its claims are believed.
    case host
    /// Inside a Flatpak sandbox (also used, fail closed, for a process that
    /// could not be inspected at all).
    case flatpak
    /// Inside a Snap's confinement.
    case snap
}

/// What a caller's process is, as read from `/proc`.
public struct ProcessIdentity: Sendable, Equatable {
    public var confinement: Confinement
    /// The installed app the process belongs to; nil when unknown. For a
    /// confined process nil means "may act for no app", never "for any".
    public var appID: String?
    /// Where the answer came from, for log lines that explain a denial
    /// (`flatpak-info`, `systemd unit app-gnome-org.gnome.Epiphany-182352.scope`).
    public var source: String

    /// An identity as the probe (or a test) found it.
    public init(confinement: Confinement, appID: String?, source: String) {
        self.confinement = confinement
        self.appID = appID
        self.source = source
    }

    /// Whether the caller's word about its own identity must be ignored.
    public var isConfined: Bool { confinement != .host }
}

/// Finds the app behind a process ID the way xdg-desktop-portal does:
/// Flatpak first, then Snap, then the systemd user unit of a host app.
///
/// The order matters: a sandboxed process can choose its unit name, but not
/// the `.flatpak-info` in its root or the `snap.` cgroup it is placed in, so
/// the unforgeable evidence is consulted first.
public struct ProcessIdentityProbe: Sendable {
    public var procRoot: String
    public var loadKeyFile: KeyFileLoader

    /// - Parameters:
    ///   - procRoot: where `/proc` is; tests point it at a fake tree.
    ///   - loadKeyFile: the parser for `.flatpak-info` (GLib's, in the service).
    public init(procRoot: String = "/proc", loadKeyFile: @escaping KeyFileLoader) {
        self.procRoot = procRoot
        self.loadKeyFile = loadKeyFile
    }

    /// The identity of process `pid`; never fails, because an unreadable
    /// process must still get an answer that errs on the safe side.
    ///
    /// Only a live process whose PID cannot have been reused since its bus
    /// connection appeared is inspected: a process that has exited (a zombie
    /// shows no root and an empty cgroup) or that started after
    /// `connectedAtTicks` is not the one that connected, and is treated as
    /// confined with no app.
    ///
    /// - Parameter connectedAtTicks: when the caller's connection was first
    ///   seen, in clock ticks since boot (as `/proc/PID/stat` counts a start
    ///   time); nil skips that check.
    public func identify(pid: UInt32, catalog: AppCatalog, connectedAtTicks: UInt64? = nil) -> ProcessIdentity {
        let processDir = "\(procRoot)/\(pid)"
        func failClosed(_ why: String) -> ProcessIdentity {
            ProcessIdentity(confinement: .flatpak, appID: nil, source: "\(why); treated as confined with no app")
        }
        guard fileKind(atPath: processDir) == .directory else {
            // The process is gone (or never was): without evidence that it is
            // unconfined, treating it as unconfined would let a sandboxed app
            // that exits quickly act for anyone.
            return failClosed("\(processDir) does not exist")
        }
        guard let before = Self.processStatus(processDir: processDir) else { return failClosed("\(processDir)/stat is unreadable") }
        guard !before.hasExited else { return failClosed("process \(pid) has exited") }
        // One tick of slack: both sides are rounded to clock ticks.
        if let connectedAtTicks, before.startTicks > connectedAtTicks + 1 {
            return failClosed("process \(pid) started after its bus connection appeared (its PID was reused)")
        }
        let identity = evidence(processDir: processDir, catalog: catalog)
        // What was read belongs to `pid` only if it is still the same live process.
        guard let after = Self.processStatus(processDir: processDir), !after.hasExited,
              after.startTicks == before.startTicks else {
            return failClosed("process \(pid) exited while it was inspected")
        }
        return identity
    }

    /// Clock ticks since boot now, as `/proc/PID/stat` counts a start time.
    public static func ticksSinceBoot() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hertz = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        return UInt64(now.tv_sec) * hertz + UInt64(now.tv_nsec) * hertz / 1_000_000_000
    }

    /// State and start time from `/proc/PID/stat`.
    struct ProcessStatus: Equatable {
        /// Zombie or dead: its root and cgroup no longer say anything.
        var hasExited: Bool
        /// Clock ticks since boot.
        var startTicks: UInt64
    }

    /// Parses `/proc/PID/stat`: the fields after the command name, which is
    /// in parentheses and may itself contain spaces and parentheses.
    static func processStatus(processDir: String) -> ProcessStatus? {
        guard let stat = readTextFile(atPath: processDir + "/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is the state (field 3 of proc(5)); the start time is field 22.
        guard fields.count > 19, let state = fields[0].first, let start = UInt64(fields[19]) else { return nil }
        return ProcessStatus(hasExited: state == "Z" || state == "X" || state == "x", startTicks: start)
    }

    /// Flatpak, Snap or host, from the process's root and cgroup.
    private func evidence(processDir: String, catalog: AppCatalog) -> ProcessIdentity {
        switch Self.flatpakInfoState(processDir: processDir) {
        case .present(let infoPath):
            guard let file = loadKeyFile(infoPath),
                  let name = file.string(group: "Application", key: "name"), !name.isEmpty else {
                return ProcessIdentity(confinement: .flatpak, appID: nil,
                                       source: "flatpak-info without [Application] name (a runtime or unreadable)")
            }
            return ProcessIdentity(confinement: .flatpak, appID: name, source: "flatpak-info")
        case .inaccessible:
            return ProcessIdentity(confinement: .flatpak, appID: nil,
                                   source: "\(processDir)/root is not accessible; treated as confined with no app")
        case .absent:
            break
        }

        guard let cgroup = readTextFile(atPath: processDir + "/cgroup") else {
            // Without the cgroup a Snap cannot be told from the host.
            return ProcessIdentity(confinement: .flatpak, appID: nil, source: "cgroup unreadable; treated as confined with no app")
        }
        if let snap = Self.snapName(fromCgroup: cgroup) {
            return ProcessIdentity(confinement: .snap, appID: catalog.app(withSnapInstanceName: snap)?.id,
                                   source: "snap \(snap)")
        }
        for unit in Self.unitNames(fromCgroup: cgroup) {
            for candidate in Self.appIDCandidates(fromUnitName: unit) where catalog.app(candidate) != nil {
                return ProcessIdentity(confinement: .host, appID: candidate, source: "systemd unit \(unit)")
            }
        }
        return ProcessIdentity(confinement: .host, appID: nil, source: "host, no app unit")
    }

    enum FlatpakInfoState: Equatable {
        case present(String)
        case absent
        case inaccessible
    }

    /// Whether `<processDir>/root/.flatpak-info` exists, telling "absent"
    /// from "cannot look".
    ///
    /// A root we may not open is a reason to refuse, not to assume the host,
    /// except when it is on FUSE (toolbox containers), which a Flatpak never
    /// uses as its root; this mirrors xdg-desktop-portal.
    static func flatpakInfoState(processDir: String) -> FlatpakInfoState {
        // A root that cannot be followed at all (a process exiting) proves nothing.
        guard access(processDir + "/root", F_OK) == 0 else {
            let rootErrno = errno
            return rootErrno == EACCES && rootOnFUSE(processDir) ? .absent : .inaccessible
        }
        let info = processDir + "/root/.flatpak-info"
        if access(info, F_OK) == 0 { return .present(info) }
        let infoErrno = errno
        if infoErrno == ENOENT || infoErrno == ENOTDIR { return .absent }
        if infoErrno == EACCES, rootOnFUSE(processDir) { return .absent }
        return .inaccessible
    }

    private static func rootOnFUSE(_ processDir: String) -> Bool {
        guard let mountinfo = readTextFile(atPath: processDir + "/mountinfo") else { return false }
        return rootFilesystemType(fromMountinfo: mountinfo)?.hasPrefix("fuse") == true
    }

    /// The filesystem type mounted last on `/` in a `/proc/PID/mountinfo`
    /// (`36 35 98:0 / / rw - fuse.fuse-overlayfs …` → `fuse.fuse-overlayfs`).
    static func rootFilesystemType(fromMountinfo mountinfo: String) -> String? {
        var type: String?
        for line in mountinfo.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == "/", let dash = fields.firstIndex(of: "-"),
                  dash + 1 < fields.count else { continue }
            type = String(fields[dash + 1])
        }
        return type
    }

    /// The cgroup paths of a `/proc/PID/cgroup` file, one per line, for both
    /// the unified (`0::/path`) and the v1 (`N:controllers:/path`) layout.
    static func cgroupPaths(fromCgroup cgroup: String) -> [Substring] {
        cgroup.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            return fields.count == 3 ? fields[2] : nil
        }
    }

    /// The snap's instance name (`snap.firefox.firefox-1234.scope` → `firefox`,
    /// `snap.firefox_beta.hook.configure-….scope` → `firefox_beta`), or nil
    /// when no cgroup path has a `snap.` component.
    public static func snapName(fromCgroup cgroup: String) -> String? {
        for path in cgroupPaths(fromCgroup: cgroup) {
            for component in path.split(separator: "/") where component.hasPrefix("snap.") {
                let parts = component.split(separator: ".", omittingEmptySubsequences: false)
                if parts.count >= 3, !parts[1].isEmpty { return String(parts[1]) }
            }
        }
        return nil
    }

    /// The systemd app units (`app-….scope`, `app-….service`) in the cgroup
    /// paths, innermost first, without duplicates.
    ///
    /// Innermost first because a process in a sub-cgroup of an app's unit
    /// still belongs to that app, while a unit nested deeper is more specific.
    public static func unitNames(fromCgroup cgroup: String) -> [String] {
        var result: [String] = []
        for path in cgroupPaths(fromCgroup: cgroup) {
            for component in path.split(separator: "/").reversed()
            where component.hasPrefix("app-") && (component.hasSuffix(".scope") || component.hasSuffix(".service")) {
                let unit = String(component)
                if !result.contains(unit) { result.append(unit) }
            }
        }
        return result
    }

    /// The app IDs a unit name may stand for, most likely first.
    ///
    /// The XDG naming is `app[-<launcher>]-<appid>-<random>.scope` or
    /// `app[-<launcher>]-<appid>[@<random>].service`, and app IDs may contain
    /// `-` themselves, so the name alone is ambiguous: the caller keeps the
    /// first candidate that is an installed app. Splitting happens before
    /// unescaping, so an escaped `\x2d` is never taken for a separator.
    public static func appIDCandidates(fromUnitName unit: String) -> [String] {
        guard unit.hasPrefix("app-") else { return [] }
        var body = Substring(unit.dropFirst("app-".count))
        let isScope: Bool
        if body.hasSuffix(".scope") {
            body = body.dropLast(".scope".count)
            isScope = true
        } else if body.hasSuffix(".service") {
            body = body.dropLast(".service".count)
            if let at = body.lastIndex(of: "@") { body = body[..<at] }
            isScope = false
        } else {
            return []
        }
        let withoutLauncher = body.firstIndex(of: "-").map { body[body.index(after: $0)...] }
        func withoutRandom(_ s: Substring?) -> Substring? {
            guard let s, let dash = s.lastIndex(of: "-") else { return nil }
            return s[..<dash]
        }
        // A scope always ends in a random part; a service only sometimes
        // (`-autostart`, or a launcher that appends one anyway).
        let ordered: [Substring?] = isScope
            ? [withoutRandom(body), withoutRandom(withoutLauncher), body, withoutLauncher]
            : [body, withoutLauncher, withoutRandom(body), withoutRandom(withoutLauncher)]
        var result: [String] = []
        for candidate in ordered {
            guard let candidate, !candidate.isEmpty else { continue }
            let id = unescape(candidate)
            if !id.isEmpty, !result.contains(id) { result.append(id) }
        }
        return result
    }

    /// Undoes systemd's unit-name escaping (`\x2d` → `-`); malformed escapes
    /// stay as they are.
    public static func unescape(_ name: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(name.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "\\"), i + 3 < utf8.count, utf8[i + 1] == UInt8(ascii: "x"),
               let high = hexValue(utf8[i + 2]), let low = hexValue(utf8[i + 3]) {
                bytes.append(high << 4 | low)
                i += 4
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// What one bus connection may act for: the spec's "Who is calling" and
/// "Claims" rules in one place, so that every method applies them alike.
///
/// A confined connection is bound to the app its sandbox says it is. An
/// unconfined one is believed about itself (host identity is advisory: any
/// unconfined process of the user can do anything the user can), and
/// accumulates every app it has claimed, so that a script which created an
/// activity with `app-id` may later change it.
public struct ConnectionIdentity: Sendable {
    /// What `/proc` said about the connection's process when it first called.
    public let process: ProcessIdentity
    /// Well-known bus names the connection owns that are installed app IDs.
    public private(set) var ownedAppNames: [String]
    /// The app set by `RegisterApplication`, used when a call names none.
    public private(set) var registeredApp: String?
    /// Every app this connection has named, per call or by registration.
    public private(set) var claimedApps: Set<String> = []

    /// - Parameters:
    ///   - process: the probe's answer for the connection's PID.
    ///   - ownedAppNames: bus names it owns that are app IDs; only consulted
    ///     for unconfined callers, since a sandbox's bus names are policed by
    ///     its proxy and say nothing its sandbox does not already say.
    public init(process: ProcessIdentity, ownedAppNames: [String] = []) {
        self.process = process
        self.ownedAppNames = ownedAppNames
    }

    /// Whether the connection is bound to its sandbox's app.
    public var isConfined: Bool { process.isConfined }

    /// The same identity with the bus names it now owns, for when
    /// `NameOwnerChanged` says they changed; claims and registration persist.
    public func replacingOwnedAppNames(_ names: [String]) -> ConnectionIdentity {
        var copy = self
        copy.ownedAppNames = names
        return copy
    }

    /// The app a call acts for, given the `app-id` the call named (if any).
    ///
    /// A successful claim by an unconfined caller is remembered in
    /// ``claimedApps``.
    public mutating func actingApp(claim: String?, catalog: AppCatalog) throws(UserActivityError) -> String {
        if let claim { try AppIDName.validate(claim, as: "app-id", catalog: catalog) }
        if isConfined {
            if let claim, claim != process.appID {
                throw deniedClaim(claim)
            }
            return try confinedApp(catalog: catalog)
        }
        if let claim {
            guard catalog.app(claim) != nil else { throw Self.notInstalled(claim) }
            claimedApps.insert(claim)
            return claim
        }
        if let registeredApp {
            guard catalog.app(registeredApp) != nil else {
                throw .unknownApplication(
                    "the app '\(registeredApp)' this connection registered with RegisterApplication is no longer installed: register an installed app or pass app-id")
            }
            return registeredApp
        }
        if let unitApp = process.appID, catalog.app(unitApp) != nil { return unitApp }
        if let owned = ownedAppNames.first(where: { catalog.app($0) != nil }) { return owned }
        throw .unknownApplication(
            "cannot tell which app is calling: call RegisterApplication or pass app-id (the desktop-file ID of an installed app, e.g. com.example.Editor)")
    }

    /// `RegisterApplication`: sets the app used when a call names none,
    /// replacing an earlier registration.
    public mutating func register(app: String, catalog: AppCatalog) throws(UserActivityError) {
        try AppIDName.validate(app, as: "app ID", catalog: catalog)
        if isConfined {
            guard app == process.appID else { throw deniedClaim(app) }
        }
        guard catalog.app(app) != nil else { throw Self.notInstalled(app) }
        registeredApp = app
        claimedApps.insert(app)
    }

    /// Whether this connection may change the activities of `app`.
    public func mayActFor(app: String) -> Bool {
        if isConfined { return process.appID != nil && app == process.appID }
        return claimedApps.contains(app) || registeredApp == app || process.appID == app
            || ownedAppNames.contains(app)
    }

    /// The only app whose saved activities this caller may see and continue
    /// (Search, GetSuggestions, the Continue methods); nil means all apps.
    ///
    /// A confined caller whose app is unknown gets the empty string, which is
    /// no app's ID, so it sees nothing rather than everything.
    public func visibleApp() -> String? {
        guard isConfined else { return nil }
        return process.appID ?? ""
    }

    private func confinedApp(catalog: AppCatalog) throws(UserActivityError) -> String {
        guard let app = process.appID else {
            throw .unknownApplication(
                "the calling sandboxed process could not be matched to an installed app (\(process.source)); run it as an installed Flatpak or Snap app whose desktop entry is installed")
        }
        guard catalog.app(app) != nil else {
            throw .unknownApplication(
                "the calling sandboxed app '\(app)' has no installed desktop entry (\(app).desktop); install it so that it can use activities")
        }
        return app
    }

    private func deniedClaim(_ claim: String) -> UserActivityError {
        let own = process.appID.map { "'\($0)'" } ?? "no identifiable app"
        return .accessDenied(
            "a sandboxed caller may act only for its own app (\(own)), not for '\(claim)': omit app-id or pass its own app ID")
    }

    private static func notInstalled(_ app: String) -> UserActivityError {
        .unknownApplication(
            "no installed app has the ID '\(app)': install \(app).desktop in an applications directory (e.g. ~/.local/share/applications) or name an installed app")
    }
}
