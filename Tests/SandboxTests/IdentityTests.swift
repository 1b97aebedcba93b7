// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

@Suite("Sandbox identity", .enabled(if: sandboxesAvailable, "bwrap/xdg-dbus-proxy unavailable"))
struct SandboxIdentityTests {
    /// Behind xdg-dbus-proxy the daemon sees the proxy's process, whose root
    /// has the /.flatpak-info: the app is itself and nobody else.
    @Test("a Flatpak app behind xdg-dbus-proxy is identified as its own app", arguments: [
        SandboxedApp.BusAccess.userActivity, .directSocket,
    ])
    func flatpakIdentity(access: SandboxedApp.BusAccess) throws {
        let harness = try SandboxHarness()
        let sandbox = try harness.sandbox(access: access)
        let agent = try sandbox.spawnAgent([
            managerCall("RegisterApplication", "(\(gv(UA.editor)),)"),
            managerCall("RegisterApplication", "(\(gv(UA.sandboxed)),)"),
            managerCall("CreateActivity", "(\(gv(UA.sandboxedType)), @a{sv} {})"),
            managerCall("CreateActivity", "(\(gv(UA.editType)), {'app-id': <\(gv(UA.editor))>})"),
            managerCall("CreateActivity", "(\(gv(UA.editType)), @a{sv} {})"),
        ], dumpReceived: false)
        let calls = try agent.finish().filter { $0.step == "call" }
        try #require(calls.count == 5, "\(agent.allReports) \(agent.process.stderrText) \(harness.logTail())")
        #expect(calls[0].error == UA.error("AccessDenied"), "\(calls[0])")
        #expect(calls[1].ok, "\(calls[1])")
        #expect(calls[2].ok && objectPath(in: calls[2].reply)?.hasPrefix(UA.activityPathPrefix) == true, "\(calls[2])")
        #expect(calls[3].error == UA.error("AccessDenied"), "\(calls[3])")
        #expect(calls[4].error == UA.error("NotDeclared"), "\(calls[4])")
        // The activity belongs to the sandbox's app, as any reader sees.
        let path = try #require(objectPath(in: calls[2].reply))
        let owner = try harness.bus.run("busctl", ["--user", "get-property", UA.busName, path, UA.activityInterface, "AppId"])
        // The sandboxed agent has exited, so its activity may be gone already: only check when still there.
        if owner.succeeded { #expect(owner.trimmedStdout == "s \"\(UA.sandboxed)\"") }
        // The daemon's log reaches the test through a pipe, read as it arrives.
        #expect(waitUntil(timeout: 30) { harness.bus.log.contains("app=\(UA.sandboxed)") && harness.bus.log.contains("source=flatpak-info") },
                "\(harness.logTail())")
    }

    /// A process in a `snap.snappy.app-….scope` cgroup is the app whose
    /// desktop entry names that snap.
    @Test("a process in a snap cgroup is identified as its snap's app",
          .enabled(if: (try? SnapScope.writableHierarchy().get()) != nil, "no writable cgroup hierarchy"))
    func snapIdentity() throws {
        let harness = try SandboxHarness()
        let scope = try SnapScope(bus: harness.bus, snapName: "snappy")
        let agent = try scope.spawnAgent([
            managerCall("RegisterApplication", "(\(gv(UA.editor)),)"),
            managerCall("CreateActivity", "('org.snapcraft.Snappy.snap', @a{sv} {})"),
        ], directory: harness.directory, dumpReceived: false)
        let calls = try agent.finish().filter { $0.step == "call" }
        try #require(calls.count == 2, "\(agent.allReports) \(agent.process.stderrText) \(harness.logTail())")
        #expect(calls[0].error == UA.error("AccessDenied"), "\(calls[0])")
        #expect(calls[1].ok, "\(calls[1])")
        #expect(waitUntil(timeout: 30) { harness.bus.log.contains("source=snap snappy") }, "\(harness.logTail())")
    }
}
