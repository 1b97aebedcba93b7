// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import UserActivityCore

private func installed(_ ids: String..., snap: [String: String] = [:]) -> AppCatalog {
    AppCatalog(apps: ids.map { InstalledApp(id: $0, desktopFilePath: "/x/\($0).desktop", team: AppCatalog.implicitTeam(of: $0)) }
        + snap.map { InstalledApp(id: $0.key, desktopFilePath: "/x/\($0.key).desktop", team: $0.key, snapInstanceName: $0.value) })
}

private let userSlice = "/user.slice/user-1000.slice/user@1000.service/app.slice/"

@Suite struct ProcessIdentityProbeTests {
    let tree: FixtureTree
    let probe: ProcessIdentityProbe
    let catalog = installed("org.gnome.Epiphany", "org.kde.okular", "com.obsproject.Studio", "org.gnome.Text-Editor",
                            snap: ["firefox_firefox": "firefox"])

    init() throws {
        tree = try FixtureTree()
        probe = ProcessIdentityProbe(procRoot: tree.path("proc"), loadKeyFile: glibLoader)
    }

    private func process(_ pid: UInt32, cgroup: String? = nil, flatpakInfo: String? = nil,
                         state: Character = "S", startTicks: UInt64 = 0, root: Bool = true) throws {
        if root { try tree.makeDirectory("proc/\(pid)/root") } else { try tree.makeDirectory("proc/\(pid)") }
        // Fields 3 (state) and 22 (start time) are the ones read.
        try tree.write("proc/\(pid)/stat", "\(pid) (fixture (app)) \(state) 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 \(startTicks) 0 0\n")
        if let cgroup { try tree.write("proc/\(pid)/cgroup", cgroup) }
        if let flatpakInfo { try tree.write("proc/\(pid)/root/.flatpak-info", flatpakInfo) }
    }

    // MARK: Flatpak

    @Test func flatpakApp() throws {
        try process(10, cgroup: "0::\(userSlice)app-flatpak-org.gnome.Epiphany-1234.scope\n",
                    flatpakInfo: "[Application]\nname=org.gnome.Epiphany\nruntime=runtime/org.gnome.Platform/x86_64/45\n")
        let identity = probe.identify(pid: 10, catalog: catalog)
        #expect(identity == ProcessIdentity(confinement: .flatpak, appID: "org.gnome.Epiphany", source: "flatpak-info"))
        #expect(identity.isConfined)
    }

    @Test func flatpakWinsOverAHostLookingUnit() throws {
        try process(11, cgroup: "0::\(userSlice)app-gnome-org.kde.okular-1.scope\n",
                    flatpakInfo: "[Application]\nname=com.evil.App\n")
        let identity = probe.identify(pid: 11, catalog: catalog)
        #expect(identity.confinement == .flatpak)
        #expect(identity.appID == "com.evil.App")
    }

    @Test(arguments: ["[Runtime]\nname=org.gnome.Platform\n", "garbage \u{1} not a key file", "[Application]\nname=\n", ""])
    func flatpakWithoutAppNameIsConfinedWithNoApp(info: String) throws {
        try process(12, cgroup: "0::\(userSlice)app-org.gnome.Epiphany@1.service\n", flatpakInfo: info)
        let identity = probe.identify(pid: 12, catalog: catalog)
        #expect(identity.confinement == .flatpak)
        #expect(identity.appID == nil)
    }

    @Test func vanishedProcessFailsClosed() {
        let identity = probe.identify(pid: 999, catalog: catalog)
        #expect(identity.isConfined)
        #expect(identity.appID == nil)
    }

    @Test func unreadableCgroupFailsClosed() throws {
        // Without the cgroup a Snap cannot be told from the host.
        try process(13)
        let identity = probe.identify(pid: 13, catalog: catalog)
        #expect(identity.isConfined)
        #expect(identity.appID == nil)
    }

    // MARK: Only the process that connected

    private let epiphanyUnit = "0::\(userSlice)app-gnome-org.gnome.Epiphany-1.scope\n"

    @Test func liveHostProcessStartedBeforeItsConnection() throws {
        try process(20, cgroup: epiphanyUnit, startTicks: 500)
        for connectedAt: UInt64? in [nil, 500, 499, 10_000] {
            let identity = probe.identify(pid: 20, catalog: catalog, connectedAtTicks: connectedAt)
            #expect(identity == ProcessIdentity(confinement: .host, appID: "org.gnome.Epiphany",
                                                source: "systemd unit app-gnome-org.gnome.Epiphany-1.scope"), "\(String(describing: connectedAt))")
        }
    }

    @Test func processStartedAfterItsConnectionAppearedFailsClosed() throws {
        // Its PID belonged to the process that connected, which has gone.
        try process(21, cgroup: epiphanyUnit, startTicks: 500)
        let identity = probe.identify(pid: 21, catalog: catalog, connectedAtTicks: 498)
        #expect(identity.isConfined)
        #expect(identity.appID == nil)
        #expect(identity.source.contains("started after its bus connection appeared"), "\(identity.source)")
    }

    @Test(arguments: ["Z", "X"] as [Character])
    func exitedProcessFailsClosed(state: Character) throws {
        // A zombie's root leads nowhere and its cgroup is "/": it would look like the host.
        try process(22, cgroup: "0::/\n", state: state)
        let identity = probe.identify(pid: 22, catalog: catalog)
        #expect(identity.isConfined)
        #expect(identity.appID == nil)
    }

    @Test func missingStatOrRootFailsClosed() throws {
        try tree.makeDirectory("proc/23/root")
        try tree.write("proc/23/cgroup", epiphanyUnit)
        #expect(probe.identify(pid: 23, catalog: catalog).isConfined)
        try process(24, cgroup: epiphanyUnit, root: false)
        let identity = probe.identify(pid: 24, catalog: catalog)
        #expect(identity.isConfined)
        #expect(identity.appID == nil)
    }

    @Test func realProcesses() throws {
        let real = ProcessIdentityProbe(loadKeyFile: glibLoader)
        let me = try #require(ProcessIdentityProbe.processStatus(processDir: "/proc/self"))
        #expect(!me.hasExited)
        #expect(me.startTicks <= ProcessIdentityProbe.ticksSinceBoot())
        // This test process connected nothing, but it did start before now.
        if access("/.flatpak-info", F_OK) != 0 {
            #expect(real.identify(pid: UInt32(getpid()), catalog: catalog, connectedAtTicks: ProcessIdentityProbe.ticksSinceBoot()).confinement == .host)
        }
        // A child that has exited and is not reaped yet: a zombie.
        var child: pid_t = 0
        var arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { arguments.forEach { free($0) } }
        #expect(posix_spawn(&child, "/bin/true", nil, nil, &arguments, environ) == 0)
        defer { var status: Int32 = 0; waitpid(child, &status, 0) }
        let zombie = waitUntilZombie(child)
        #expect(zombie, "the child never showed as a zombie")
        let identity = real.identify(pid: UInt32(child), catalog: catalog)
        #expect(identity.isConfined && identity.appID == nil, "\(identity)")
    }

    private func waitUntilZombie(_ pid: pid_t) -> Bool {
        for _ in 0..<500 {
            if ProcessIdentityProbe.processStatus(processDir: "/proc/\(pid)")?.hasExited == true { return true }
            usleep(2_000)
        }
        return false
    }

    // MARK: Snap

    @Test func snapKnownApp() throws {
        try process(20, cgroup: "0::\(userSlice)snap.firefox.firefox-2f3c4d5e.scope\n")
        let identity = probe.identify(pid: 20, catalog: catalog)
        #expect(identity.confinement == .snap)
        #expect(identity.appID == "firefox_firefox")
    }

    @Test func snapUnknownAppIsConfinedWithoutApp() throws {
        try process(21, cgroup: "0::\(userSlice)snap.spotify.spotify-1.scope\n")
        let identity = probe.identify(pid: 21, catalog: catalog)
        #expect(identity.confinement == .snap)
        #expect(identity.appID == nil)
    }

    @Test func snapNames() {
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::\(userSlice)snap.firefox.firefox-1234.scope") == "firefox")
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::/system.slice/snap.firefox.hook.configure-0a1b.scope") == "firefox")
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::\(userSlice)snap.firefox_beta.firefox-9.scope\n") == "firefox_beta")
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "12:pids:\(userSlice)snap.vlc.vlc-1.scope\n1:name=systemd:/\n") == "vlc")
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::\(userSlice)app-gnome-org.gnome.Epiphany-1.scope") == nil)
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::/user.slice/snapshots.scope") == nil)
        #expect(ProcessIdentityProbe.snapName(fromCgroup: "0::/user.slice/snap..x.scope") == nil)
    }

    // MARK: Host units

    @Test(arguments: [
        ("app-gnome-org.gnome.Epiphany-182352.scope", "org.gnome.Epiphany"),
        ("app-KDE-org.kde.okular@12345.service", "org.kde.okular"),
        ("app-org.kde.okular@12345.service", "org.kde.okular"),
        ("app-org.kde.okular.service", "org.kde.okular"),
        ("app-gnome-org.kde.okular-autostart.service", "org.kde.okular"),
        ("app-com.obsproject.Studio-0123456789abcdef0123456789abcdef.scope", "com.obsproject.Studio"),
        (#"app-gnome-org.gnome.Text\x2dEditor-123.scope"#, "org.gnome.Text-Editor"),
    ])
    func hostUnit(unit: String, app: String) throws {
        try process(30, cgroup: "0::\(userSlice)\(unit)\n")
        let identity = probe.identify(pid: 30, catalog: catalog)
        #expect(identity.confinement == .host)
        #expect(identity.appID == app)
        #expect(identity.source == "systemd unit \(unit)")
    }

    @Test(arguments: [
        "app-gnome-org.example.NotInstalled-123.scope",
        "app-org.example.NotInstalled@1.service",
        "vte-spawn-5f6e.scope",
        "app-gnome-org.gnome.Epiphany-182352.slice",
    ])
    func hostUnitOfNoInstalledApp(unit: String) throws {
        try process(31, cgroup: "0::\(userSlice)\(unit)\n")
        let identity = probe.identify(pid: 31, catalog: catalog)
        #expect(identity.confinement == .host)
        #expect(identity.appID == nil)
    }

    @Test func cgroupV1Lines() throws {
        try process(32, cgroup: """
            12:pids:\(userSlice)app-gnome-org.gnome.Epiphany-99.scope
            11:cpuset:/
            1:name=systemd:\(userSlice)app-gnome-org.gnome.Epiphany-99.scope
            0::/

            """)
        #expect(probe.identify(pid: 32, catalog: catalog).appID == "org.gnome.Epiphany")
    }

    @Test func unitNamesInnermostFirst() {
        let cgroup = """
            1:name=systemd:\(userSlice)app-org.kde.okular@1.service/sub.scope
            0::\(userSlice)app-org.kde.okular@1.service/app-gnome-org.gnome.Epiphany-5.scope
            5:memory:/
            bad line
            """
        #expect(ProcessIdentityProbe.unitNames(fromCgroup: cgroup)
            == ["app-org.kde.okular@1.service", "app-gnome-org.gnome.Epiphany-5.scope"])
        #expect(ProcessIdentityProbe.unitNames(fromCgroup: "0::/user.slice/user-1000.slice/session-2.scope").isEmpty)
    }

    @Test func candidates() {
        #expect(ProcessIdentityProbe.appIDCandidates(fromUnitName: "app-gnome-org.gnome.Epiphany-182352.scope")
            == ["gnome-org.gnome.Epiphany", "org.gnome.Epiphany", "gnome-org.gnome.Epiphany-182352", "org.gnome.Epiphany-182352"])
        #expect(ProcessIdentityProbe.appIDCandidates(fromUnitName: "app-KDE-org.kde.okular@12345.service")
            == ["KDE-org.kde.okular", "org.kde.okular", "KDE"])
        #expect(ProcessIdentityProbe.appIDCandidates(fromUnitName: #"app-gnome-org.gnome.Text\x2dEditor-123.scope"#).contains("org.gnome.Text-Editor"))
        #expect(ProcessIdentityProbe.appIDCandidates(fromUnitName: "session-2.scope").isEmpty)
        #expect(ProcessIdentityProbe.appIDCandidates(fromUnitName: "app-foo.slice").isEmpty)
        #expect(ProcessIdentityProbe.unescape(#"a\x2db\x2Dc\xZZ\x2"#) == #"a-b-c\xZZ\x2"#)
    }

    @Test func aBrowserWithALegacyDesktopIDIsFoundFromItsUnit() throws {
        let withBrowsers = installed("firefox-esr", "chromium")
        try process(30, cgroup: "0::\(userSlice)app-gnome-firefox\\x2desr-4242.scope\n")
        #expect(probe.identify(pid: 30, catalog: withBrowsers) == ProcessIdentity(
            confinement: .host, appID: "firefox-esr", source: "systemd unit app-gnome-firefox\\x2desr-4242.scope"))
        // The same unit, its dash not escaped by the launcher.
        try process(31, cgroup: "0::\(userSlice)app-gnome-firefox-esr-4243.scope\n")
        #expect(probe.identify(pid: 31, catalog: withBrowsers).appID == "firefox-esr")
        try process(32, cgroup: "0::\(userSlice)app-chromium-99.scope\n")
        #expect(probe.identify(pid: 32, catalog: withBrowsers).appID == "chromium")
        #expect(probe.identify(pid: 32, catalog: catalog).appID == nil, "not installed: no app")
    }

    @Test func toolboxStyleFuseRoot() {
        let mountinfo = """
            22 1 0:21 / / rw,relatime - ext4 /dev/sda1 rw
            900 22 0:50 / / rw,nodev - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0
            901 900 0:51 / /proc rw - proc proc rw
            """
        #expect(ProcessIdentityProbe.rootFilesystemType(fromMountinfo: mountinfo) == "fuse.fuse-overlayfs")
        #expect(ProcessIdentityProbe.rootFilesystemType(fromMountinfo: "") == nil)
    }
}

@Suite struct ConnectionIdentityTests {
    let catalog = installed("com.example.Editor", "com.example.Viewer", "org.gnome.Epiphany")

    private func host(unitApp: String? = nil, owned: [String] = []) -> ConnectionIdentity {
        ConnectionIdentity(process: ProcessIdentity(confinement: .host, appID: unitApp, source: "test"), ownedAppNames: owned)
    }

    private func confined(_ app: String?, _ confinement: Confinement = .flatpak) -> ConnectionIdentity {
        ConnectionIdentity(process: ProcessIdentity(confinement: confinement, appID: app, source: "test"),
                           ownedAppNames: ["com.example.Viewer"])
    }

    private func kind(_ body: () throws -> Void) -> UserActivityError.Kind? {
        do {
            try body()
            return nil
        } catch {
            return (error as? UserActivityError)?.kind
        }
    }

    // MARK: actingApp, confined

    @Test func malformedClaimIsInvalidArgumentFirst() {
        var c = confined(nil)
        #expect(kind { _ = try c.actingApp(claim: "not an id", catalog: catalog) } == .invalidArgument)
        var h = host()
        #expect(kind { _ = try h.actingApp(claim: "", catalog: catalog) } == .invalidArgument)
        #expect(kind { _ = try h.actingApp(claim: "1bad id", catalog: catalog) } == .invalidArgument)
        #expect(h.claimedApps.isEmpty)
    }

    @Test func confinedClaimingAnotherAppIsDenied() throws {
        var c = confined("com.example.Editor")
        do {
            _ = try c.actingApp(claim: "com.example.Viewer", catalog: catalog)
            Issue.record("expected AccessDenied")
        } catch {
            #expect(error.kind == .accessDenied)
            #expect(error.message.contains("com.example.Viewer") && error.message.contains("com.example.Editor"))
        }
        #expect(c.claimedApps.isEmpty)
    }

    @Test func confinedActsForItsOwnApp() throws {
        var c = confined("com.example.Editor", .snap)
        #expect(try c.actingApp(claim: nil, catalog: catalog) == "com.example.Editor")
        #expect(try c.actingApp(claim: "com.example.Editor", catalog: catalog) == "com.example.Editor")
    }

    @Test func confinedWithoutAppIsUnknown() {
        var c = confined(nil)
        #expect(kind { _ = try c.actingApp(claim: nil, catalog: catalog) } == .unknownApplication)
        #expect(kind { _ = try c.actingApp(claim: "com.example.Editor", catalog: catalog) } == .accessDenied)
    }

    @Test func confinedAppNotInstalledIsUnknown() {
        var c = confined("org.example.Sandboxed")
        #expect(kind { _ = try c.actingApp(claim: nil, catalog: catalog) } == .unknownApplication)
        #expect(kind { _ = try c.actingApp(claim: "org.example.Sandboxed", catalog: catalog) } == .unknownApplication)
    }

    // MARK: actingApp, unconfined

    @Test func unconfinedClaimMustBeInstalledAndIsRemembered() throws {
        var h = host(unitApp: "org.gnome.Epiphany")
        #expect(kind { _ = try h.actingApp(claim: "org.example.Missing", catalog: catalog) } == .unknownApplication)
        #expect(h.claimedApps.isEmpty)
        #expect(try h.actingApp(claim: "com.example.Editor", catalog: catalog) == "com.example.Editor")
        #expect(try h.actingApp(claim: "com.example.Viewer", catalog: catalog) == "com.example.Viewer")
        #expect(h.claimedApps == ["com.example.Editor", "com.example.Viewer"])
        // A claim is per call: without one the unit's app is used again.
        #expect(try h.actingApp(claim: nil, catalog: catalog) == "org.gnome.Epiphany")
    }

    @Test func unconfinedFallbackOrder() throws {
        var h = host(unitApp: "org.gnome.Epiphany", owned: ["com.example.Viewer"])
        #expect(try h.actingApp(claim: nil, catalog: catalog) == "org.gnome.Epiphany")
        try h.register(app: "com.example.Editor", catalog: catalog)
        #expect(try h.actingApp(claim: nil, catalog: catalog) == "com.example.Editor")

        var owner = host(owned: ["org.example.Missing", "com.example.Viewer"])
        #expect(try owner.actingApp(claim: nil, catalog: catalog) == "com.example.Viewer")

        var stale = host(unitApp: "org.example.Missing")
        #expect(kind { _ = try stale.actingApp(claim: nil, catalog: catalog) } == .unknownApplication)
    }

    @Test func unconfinedWithoutAnythingIsUnknown() {
        var h = host()
        do {
            _ = try h.actingApp(claim: nil, catalog: catalog)
            Issue.record("expected UnknownApplication")
        } catch {
            #expect(error.kind == .unknownApplication)
            #expect(error.message.contains("RegisterApplication") && error.message.contains("app-id"))
        }
    }

    @Test func registeredAppThatWasUninstalled() throws {
        var h = host()
        try h.register(app: "com.example.Editor", catalog: catalog)
        #expect(kind { _ = try h.actingApp(claim: nil, catalog: installed("com.example.Viewer")) } == .unknownApplication)
    }

    // MARK: register

    @Test func registerRules() throws {
        var h = host()
        #expect(kind { try h.register(app: "bad id", catalog: catalog) } == .invalidArgument)
        #expect(kind { try h.register(app: "bad", catalog: catalog) } == .unknownApplication, "a legacy ID that is not installed")
        #expect(kind { try h.register(app: "org.example.Missing", catalog: catalog) } == .unknownApplication)
        #expect(h.registeredApp == nil)
        try h.register(app: "com.example.Editor", catalog: catalog)
        try h.register(app: "com.example.Viewer", catalog: catalog)
        #expect(h.registeredApp == "com.example.Viewer")
        #expect(h.claimedApps == ["com.example.Editor", "com.example.Viewer"])

        var c = confined("com.example.Editor")
        #expect(kind { try c.register(app: "com.example.Viewer", catalog: catalog) } == .accessDenied)
        #expect(kind { try c.register(app: "no/", catalog: catalog) } == .invalidArgument)
        try c.register(app: "com.example.Editor", catalog: catalog)
        #expect(c.registeredApp == "com.example.Editor")

        var unknown = confined("org.example.Sandboxed")
        #expect(kind { try unknown.register(app: "org.example.Sandboxed", catalog: catalog) } == .unknownApplication)
    }

    // MARK: mayActFor, visibleApp

    @Test func mayActForConfined() {
        let c = confined("com.example.Editor")
        #expect(c.mayActFor(app: "com.example.Editor"))
        #expect(!c.mayActFor(app: "com.example.Viewer"), "owned bus names do not count for a sandbox")
        #expect(!confined(nil).mayActFor(app: "com.example.Editor"))
    }

    @Test func mayActForUnconfinedIsTheUnionOfItsClaims() throws {
        var h = host(unitApp: "org.gnome.Epiphany", owned: ["com.example.Viewer"])
        #expect(h.mayActFor(app: "org.gnome.Epiphany"))
        #expect(h.mayActFor(app: "com.example.Viewer"))
        #expect(!h.mayActFor(app: "com.example.Editor"))
        _ = try h.actingApp(claim: "com.example.Editor", catalog: catalog)
        #expect(h.mayActFor(app: "com.example.Editor"))

        let renamed = h.replacingOwnedAppNames([])
        #expect(!renamed.mayActFor(app: "com.example.Viewer"))
        #expect(renamed.mayActFor(app: "com.example.Editor"), "claims survive a change of bus names")

        var r = host()
        try r.register(app: "com.example.Editor", catalog: catalog)
        #expect(r.mayActFor(app: "com.example.Editor"))
        #expect(!r.mayActFor(app: "org.gnome.Epiphany"))
    }

    @Test func visibleApp() {
        #expect(host(unitApp: "org.gnome.Epiphany").visibleApp() == nil)
        #expect(confined("com.example.Editor").visibleApp() == "com.example.Editor")
        #expect(confined(nil).visibleApp() == "", "an unknown sandbox sees nothing, not everything")
        #expect(confined(nil).isConfined && !host().isConfined)
    }

    // MARK: Legacy desktop IDs

    private let withLegacy = installed("com.example.Editor", "firefox-esr", "chromium")

    @Test func installedLegacyIDsActLikeAppIDs() throws {
        var h = host()
        #expect(try h.actingApp(claim: "firefox-esr", catalog: withLegacy) == "firefox-esr")
        #expect(h.mayActFor(app: "firefox-esr"))
        try h.register(app: "chromium", catalog: withLegacy)
        #expect(try h.actingApp(claim: nil, catalog: withLegacy) == "chromium")

        var unit = host(unitApp: "firefox-esr")
        #expect(try unit.actingApp(claim: nil, catalog: withLegacy) == "firefox-esr")

        var c = confined("chromium", .snap)
        #expect(try c.actingApp(claim: "chromium", catalog: withLegacy) == "chromium")
        #expect(kind { _ = try c.actingApp(claim: "firefox-esr", catalog: withLegacy) } == .accessDenied)
    }

    @Test func legacyIDsThatAreNotInstalledAreUnknown() {
        var h = host()
        #expect(kind { _ = try h.actingApp(claim: "vlc", catalog: withLegacy) } == .unknownApplication)
        #expect(kind { try h.register(app: "libreoffice-writer", catalog: withLegacy) } == .unknownApplication)
        #expect(h.claimedApps.isEmpty)
        for malformed in ["", "firefox esr", "firefox..esr", ".chromium", "chromium.", "chr\u{f6}mium", String(repeating: "a", count: 256)] {
            #expect(kind { _ = try h.actingApp(claim: malformed, catalog: withLegacy) } == .invalidArgument, "\(malformed)")
        }
    }
}

@Suite struct AppIDNameTests {
    @Test(arguments: ["firefox-esr", "chromium", "vlc", "libreoffice-writer", "1password", "a_b", "org.gnome.Epiphany", "kde4-kate.x"])
    func wellFormed(id: String) {
        #expect(AppIDName.isWellFormed(id))
    }

    @Test(arguments: ["", "a b", "a..b", ".a", "a.", "a/b", "é", "firefox-esr.desktop\n", String(repeating: "x", count: 256)])
    func malformed(id: String) {
        #expect(!AppIDName.isWellFormed(id))
        #expect(throws: UserActivityError.self) { try AppIDName.validate(id, as: "app ID") }
    }

    @Test func everyReverseDNSNameIsAWellFormedAppID() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ09_-.é /")
        for _ in 0..<2_000 {
            let name = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            if ReverseDNSName.isValid(name) { #expect(AppIDName.isWellFormed(name), "\(name)") }
            if AppIDName.isWellFormed(name) {
                #expect(!name.isEmpty && !name.contains(" ") && !name.contains("/") && !name.contains("é"), "\(name)")
            }
        }
    }

    @Test func onlyAnInstalledLegacyIDPasses() throws {
        let catalog = installed("firefox-esr")
        try AppIDName.validate("firefox-esr", as: "app ID", catalog: catalog)
        try AppIDName.validate("org.example.NotInstalled", as: "app ID", catalog: catalog)
        do {
            try AppIDName.validate("chromium", as: "app ID", catalog: catalog)
            Issue.record("expected UnknownApplication")
        } catch {
            #expect(error.kind == .unknownApplication)
            #expect(error.message.contains("chromium.desktop"))
        }
    }
}
