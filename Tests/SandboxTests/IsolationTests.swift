// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

/// What a sandboxed app can do to, and learn about, another vendor's app:
/// nothing, through any method.
@Suite("Sandbox isolation", .enabled(if: sandboxesAvailable, "bwrap/xdg-dbus-proxy unavailable"))
struct IsolationTests {
    static let secretTitle = "ISOLATION-SECRET-TITLE"
    static let secretSaved = "ISOLATION-SECRET-SAVED"
    static let searchProvider = UA.managerPath + "/SearchProvider"
    static let searchProviderInterface = "org.gnome.Shell.SearchProvider2"

    /// The first single-quoted value in a reply such as `('abc',)`.
    static func firstString(in reply: String?) -> String? {
        guard let reply, let start = reply.firstIndex(of: "'") else { return nil }
        let rest = reply[reply.index(after: start)...]
        return rest.firstIndex(of: "'").map { String(rest[..<$0]) }
    }

    /// How the app under test is confined.
    enum Confinement: Sendable, CustomStringConvertible {
        case flatpak(SandboxedApp.BusAccess)
        case snap

        var appType: String { if case .snap = self { return "org.snapcraft.Snappy.snap" } else { return UA.sandboxedType } }
        var description: String {
            switch self {
            case .flatpak(let access): return "flatpak \(access)"
            case .snap: return "snap"
            }
        }
    }

    static let confinements: [Confinement] = {
        var all: [Confinement] = [
            .flatpak(.userActivity),
            .flatpak(.userActivityCalls),
            .flatpak(.directSocket),
        ]
        if (try? SnapScope.writableHierarchy().get()) != nil { all.append(.snap) }
        return all
    }()

    @Test("a sandboxed app cannot act for, continue into, delete for or enumerate another vendor's app",
          arguments: confinements)
    func isolation(confinement: Confinement) throws {
        let harness = try SandboxHarness()
        let done = harness.directory.appending("sandbox-done")
        // org.other.Player, unconfined: a live activity and a saved one, kept until the sandbox is done.
        let player = try harness.host([
            managerCall("RegisterApplication", "(\(gv(UA.player)),)"),
            // It listens, so that it hears its own activity (the check at the end).
            managerCall("Subscribe"),
            // Current, so that the session's CurrentActivity names it.
            managerCall("BecomeCurrent", "(\(gv(UA.playerType)), {'title': <\(gv(Self.secretTitle))>, 'user-info': <{'k': <'ISOLATION-SECRET-INFO'>}>})"),
            managerCall("Donate", "(\(gv(UA.playerType)), {'title': <\(gv(Self.secretSaved))>, 'persistent-identifier': <'p-1'>, 'eligible-for-search': <true>})"),
            .say("CREATED"),
            .waitForFile(done),
            managerCall("Search", "('\(Self.secretSaved)', @a{sv} {})"),
        ])
        try #require(try player.waitForSay("CREATED"), "\(player.allReports) \(player.process.stderrText)\n\(harness.logTail())")
        let playerCalls = player.callReports
        let otherPath = try #require(objectPath(in: playerCalls[2].reply), "\(playerCalls)")
        let savedID = try #require(Self.firstString(in: playerCalls[3].reply), "\(playerCalls)")

        let steps: [(SandboxAgent.Step, expected: String?)] = [
            (managerCall("RegisterApplication", "(\(gv(UA.player)),)"), UA.error("AccessDenied")),
            (managerCall("CreateActivity", "(\(gv(UA.playerType)), {'app-id': <\(gv(UA.player))>})"), UA.error("AccessDenied")),
            (managerCall("CreateActivity", "(\(gv(UA.playerType)), @a{sv} {})"), UA.error("NotDeclared")),
            // Its own activity, so that there is something of its own to list.
            (managerCall("CreateActivity", "(\(gv(confinement.appType)), @a{sv} {})"), nil),
            // The other app's live activity: no change, no read, no continuation; not named in errors.
            (activityCall(otherPath, "Update", "({'title': <'hijacked'>},)"), UA.error("AccessDenied")),
            (activityCall(otherPath, "BecomeCurrent"), UA.error("AccessDenied")),
            (activityCall(otherPath, "Invalidate"), UA.error("AccessDenied")),
            (activityCall(otherPath, "Continue", "(@a{sv} {},)"), UA.error("AccessDenied")),
            (.call(path: otherPath, interface: "org.freedesktop.DBus.Properties", member: "Get",
                   arguments: "(\(gv(UA.activityInterface)), 'Title')"), UA.error("AccessDenied")),
            (.call(path: otherPath, interface: "org.freedesktop.DBus.Properties", member: "Set",
                   arguments: "(\(gv(UA.activityInterface)), 'Title', <'hijacked'>)"), UA.error("AccessDenied")),
            // Continuing into another vendor's app: as itself (the publisher), never of unknown origin.
            (managerCall("ContinueActivity", "(\(gv(UA.playerType)), {'title': <'injected'>}, {'timeout-ms': <uint32 3000>})"), UA.error("NoHandler")),
            (managerCall("ContinueActivity", "(\(gv(UA.playerType)), {'title': <'injected'>}, {'target-app-id': <\(gv(UA.player))>, 'timeout-ms': <uint32 3000>})"), UA.error("NoHandler")),
            (managerCall("ContinueActivity", "(\(gv(UA.playerType)), {'app-id': <\(gv(UA.player))>}, {'timeout-ms': <uint32 3000>})"), UA.error("AccessDenied")),
            (managerCall("ContinueSavedActivity", "(\(gv(savedID)), {'timeout-ms': <uint32 3000>})"), UA.error("NotFound")),
            // Saved data of the other app: not deleted, not forgotten, not found.
            (managerCall("DeleteSavedActivities", "(['p-1'],)"), nil),
            (managerCall("DeleteAllSavedActivities"), nil),
            (managerCall("ForgetApplication", "(\(gv(UA.player)),)"), UA.error("AccessDenied")),
            (managerCall("ForgetAll"), UA.error("AccessDenied")),
            (managerCall("Search", "('\(Self.secretSaved)', @a{sv} {})"), nil),
            // Enumeration.
            (.call(path: UA.managerPath + "/activity", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"), nil),
            (.call(path: UA.managerPath, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"), nil),
            (.call(path: UA.managerPath, interface: "org.freedesktop.DBus.Properties", member: "Get",
                   arguments: "(\(gv(UA.managerInterface)), 'CurrentActivity')"), nil),
            // The desktop search objects the shell and KRunner read: scoped to the caller's own app.
            (.call(path: Self.searchProvider, interface: Self.searchProviderInterface, member: "GetInitialResultSet",
                   arguments: "([\(gv(Self.secretSaved))],)"), nil),
            (.call(path: Self.searchProvider + "/org_2eother_2ePlayer", interface: Self.searchProviderInterface, member: "GetInitialResultSet",
                   arguments: "([\(gv(Self.secretSaved))],)"), nil),
            (.call(path: Self.searchProvider, interface: Self.searchProviderInterface, member: "GetResultMetas",
                   arguments: "([\(gv(savedID))],)"), nil),
            (.call(path: Self.searchProvider, interface: Self.searchProviderInterface, member: "ActivateResult",
                   arguments: "(\(gv(savedID)), @as [], uint32 0)"), UA.error("NotFound")),
            (.call(path: Self.searchProvider, interface: Self.searchProviderInterface, member: "LaunchSearch",
                   arguments: "([\(gv(Self.secretSaved))], uint32 0)"), UA.error("AccessDenied")),
            (.call(path: UA.managerPath + "/KRunner", interface: "org.kde.krunner1", member: "Match",
                   arguments: "(\(gv(Self.secretSaved)),)"), nil),
            (.call(path: UA.managerPath + "/KRunner", interface: "org.kde.krunner1", member: "Run",
                   arguments: "(\(gv(savedID)), '')"), UA.error("NotFound")),
        ]
        let agent: SandboxAgent
        var keepAlive: AnyObject?
        switch confinement {
        case .flatpak(let access):
            let sandbox = try harness.sandbox(UA.sandboxed, access: access)
            keepAlive = sandbox
            agent = try sandbox.spawnAgent(steps.map(\.0))
        case .snap:
            let scope = try SnapScope(bus: harness.bus, snapName: "snappy")
            keepAlive = scope
            agent = try scope.spawnAgent(steps.map(\.0), directory: harness.directory)
        }
        defer { withExtendedLifetime(keepAlive) {} }
        let calls = try agent.finish().filter { $0.step == "call" }
        try writeFileAtomically(done, contents: "")
        try #require(calls.count == steps.count, "\(agent.allReports) \(agent.process.stderrText)\n\(harness.logTail())")
        for (index, (call, step)) in zip(calls, steps).enumerated() {
            if let expected = step.expected {
                #expect(call.error == expected, "step \(index): \(call)")
            } else {
                #expect(call.ok, "step \(index): \(call)")
            }
        }
        let ownPath = try #require(objectPath(in: calls[3].reply))
        let otherID = String(otherPath.dropFirst(UA.activityPathPrefix.count))
        let ownID = String(ownPath.dropFirst(UA.activityPathPrefix.count))

        // Errors about the other app's activity name neither that app nor the activity's type.
        for call in calls[4...9] {
            #expect(!(call.message ?? "").contains(UA.player) && !(call.message ?? "").contains(UA.playerType), "\(call)")
        }
        // Introspect lists its own activity only; GetManagedObjects likewise; CurrentActivity is not the other's.
        let introspection = calls[19].reply ?? ""
        #expect(introspection.contains("<node name=\\\"\(ownID)\\\"/>") || introspection.contains("<node name=\"\(ownID)\"/>"), "\(calls[19])")
        #expect(!introspection.contains("\"\(otherID)\"") && !introspection.contains("\"\(otherID)\\\""), "\(calls[19])")
        #expect(!(calls[20].reply ?? "").contains(otherPath + "'"), "\(calls[20])")
        #expect(calls[21].reply?.contains("'/'") == true, "\(calls[21])")
        #expect(calls[18].reply == "([],)", "\(calls[18])")
        for index in [22, 23, 24, 27] {
            #expect(calls[index].reply == "([],)" || calls[index].reply == "(@as [],)" || calls[index].reply == "(@aa{sv} [],)"
                    || calls[index].reply == "(@a(sssida{sv}) [],)", "step \(index): \(calls[index])")
        }

        // The continuation never went to the other vendor's app.
        #expect(!FileManager.default.fileExists(atPath: harness.playerLaunchedMarker), "org.other.Player was launched for the sandbox's activity")
        // Nothing of the other app's data reached the sandbox, in any reply, error or signal
        // (the saved id is not counted: the sandbox sent it, and NotFound repeats it).
        let secrets = [Self.secretTitle, Self.secretSaved, "ISOLATION-SECRET-INFO"]
        #expect(agent.leakedBytes(of: secrets) == 0, "\(secrets.filter { agent.messagesContaining($0) > 0 })")

        // The other app's data are intact.
        let playerReports = try player.finish()
        let search = playerReports.filter { $0.step == "call" }.last
        #expect(search?.reply?.contains(Self.secretSaved) == true, "the player's saved activity is gone: \(playerReports)")
        #expect(player.messagesContaining(Self.secretTitle) > 0, "the subscribed owner hears its own activity")
    }
}
