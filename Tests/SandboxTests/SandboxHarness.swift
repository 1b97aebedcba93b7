// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

// The real-sandbox tier: the BUILT `useractivityd` on a private bus, apps run
// as Flatpak runs them (bwrap with /.flatpak-info, behind xdg-dbus-proxy)
// or as snapd confines them (a snap.… cgroup), driven by SandboxAgent.

extension UA {
    /// The sandboxed app under test (team com.example).
    static let sandboxed = "com.example.Sandboxed"
    static let sandboxedType = "com.example.Sandboxed.view"
    /// Another vendor's app (team org.other).
    static let player = "org.other.Player"
    static let playerType = "org.other.Player.play"
    /// A second sandboxed app of another vendor.
    static let notes = "net.vendor.Notes"
    static let notesType = "net.vendor.Notes.note"
}

/// A private bus whose `org.example.UserActivity` is the built daemon
/// (D-Bus activation), with the fixture apps installed.
final class SandboxHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    /// Shared with host agents (scripts, dump files).
    let directory: TemporaryDirectory

    static let apps: [(id: String, types: [String], extra: [String])] = [
        (UA.editor, [UA.editType], []),
        (UA.viewer, [UA.viewType], []),
        (UA.sandboxed, [UA.sandboxedType], []),
        (UA.player, [UA.playerType], []),
        (UA.notes, [UA.notesType], []),
        ("org.snapcraft.Snappy", ["org.snapcraft.Snappy.snap"], ["X-SnapInstanceName=snappy"]),
    ]

    /// Created when org.other.Player is launched (its Exec line), i.e. when a
    /// continuation was on its way to it.
    var playerLaunchedMarker: String { directory.appending("player-launched") }

    init() throws {
        session = try SessionEnvironment()
        directory = try TemporaryDirectory(prefix: "uah-", base: TemporaryDirectory.defaultBase(maxLength: 40))
        chmod(directory.path, 0o755)
        for app in Self.apps {
            let exec = app.id == UA.player ? "/usr/bin/touch \(directory.appending("player-launched"))" : "/bin/true"
            try session.writeDesktopEntry(appID: app.id, types: app.types, exec: exec, extraLines: app.extra)
        }
        bus = try PrivateBus(environment: session)
        let daemon = try BuiltProducts.useractivityd()
        try bus.installService(name: UA.busName, exec: "\(shellQuote(daemon)) --verbose")
    }

    deinit { bus.stop() }

    /// A Flatpak sandbox of `appID` on this bus.
    func sandbox(_ appID: String = UA.sandboxed, access: SandboxedApp.BusAccess = .userActivity) throws -> SandboxedApp {
        try SandboxedApp(bus: bus, appID: appID, access: access)
    }

    /// An unconfined agent on this bus.
    func host(_ steps: [SandboxAgent.Step]) throws -> SandboxAgent {
        try SandboxAgent.host(bus: bus, directory: directory, steps: steps)
    }

    /// The bus's log (dbus-daemon and the daemon's `--verbose` output), last lines.
    func logTail(_ lines: Int = 80) -> String {
        let all = bus.log.split(separator: "\n", omittingEmptySubsequences: false)
        return "--- bus log ---\n" + all.suffix(lines).joined(separator: "\n")
    }
}

extension SandboxedApp.BusAccess {
    /// Behind the proxy with `--call` rules for the service's objects only (no `--talk`).
    static let userActivityCalls = SandboxedApp.BusAccess.call([
        "\(UA.busName)=*@/org/example/UserActivity", "\(UA.busName)=*@/org/example/UserActivity/*",
    ])
}

/// Skips a test when this machine cannot build sandboxes (no bwrap, no user namespaces).
let sandboxesAvailable = SandboxedApp.isAvailable

/// Where the real-sandbox tier is required (`USERACTIVITY_REQUIRE_SANDBOX=1`,
/// as CI sets), a machine that cannot build sandboxes is a failure, not a
/// reason to skip every test of the tier in silence.
@Suite("Sandbox tier")
struct SandboxTierTests {
    @Test("sandboxes can be built where the tier is required",
          .enabled(if: ProcessInfo.processInfo.environment["USERACTIVITY_REQUIRE_SANDBOX"] == "1", "USERACTIVITY_REQUIRE_SANDBOX is not 1"))
    func sandboxesAreAvailable() {
        if case .failure(let error) = SandboxedApp.availability {
            Issue.record("USERACTIVITY_REQUIRE_SANDBOX=1 but no sandbox can be built here, so every SandboxTests test would be skipped: \(error)")
        }
    }
}

/// GVariant text for a string.
func gv(_ s: String) -> String {
    "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
}

/// Manager method call step.
func managerCall(_ member: String, _ arguments: String = "") -> SandboxAgent.Step {
    .call(path: UA.managerPath, interface: UA.managerInterface, member: member, arguments: arguments)
}

/// Activity method call step.
func activityCall(_ path: String, _ member: String, _ arguments: String = "") -> SandboxAgent.Step {
    .call(path: path, interface: UA.activityInterface, member: member, arguments: arguments)
}

/// The object path in a `('/org/…',)` reply.
func objectPath(in reply: String?) -> String? {
    guard let reply, let start = reply.range(of: "'/"), let end = reply[start.upperBound...].firstIndex(of: "'") else { return nil }
    return String(reply[reply.index(before: start.upperBound)..<end])
}
