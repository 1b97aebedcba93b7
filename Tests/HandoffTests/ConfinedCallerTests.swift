// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

/// Whether this machine lets the tests make a mount namespace (root in CI containers).
let canMakeMountNamespaces: Bool = {
    guard let result = try? runCommand("/usr/bin/unshare", ["-m", "true"], environment: ProcessInfo.processInfo.environment, timeout: 10) else { return false }
    return result.exitCode == 0
}()

@Suite("Handoff refuses confined callers", .serialized, .enabled(if: canMakeMountNamespaces, "needs unshare -m (root or user namespaces)"))
struct ConfinedCallerTests {
    /// Runs `gdbus` in a private mount namespace whose root is an overlay of
    /// `/`, optionally with a `/.flatpak-info` in it (what a Flatpak's
    /// process has); the bus's socket directory is bound in as it is.
    func callFromRoot(_ stack: Stack, flatpak: Bool) throws -> CommandResult {
        let work = stack.session.root + "/overlay"
        let info = flatpak ? "printf '[Application]\\nname=com.example.Sandboxed\\n' > \(work)/root/.flatpak-info && " : ""
        let script = "mkdir -p \(work)/upper \(work)/work \(work)/root && "
            + "mount -t overlay overlay -o lowerdir=/,upperdir=\(work)/upper,workdir=\(work)/work \(work)/root && "
            + "mount --bind \(stack.bus.socketDirectory) \(work)/root\(stack.bus.socketDirectory) && " + info
            + "exec chroot \(work)/root gdbus call --session -d \(HO.busName) -o \(HO.managerPath) "
            + "-m org.freedesktop.DBus.Properties.Get \(HO.manager) DeviceName"
        return try runCommand("/usr/bin/unshare", ["-m", "sh", "-c", script], environment: stack.bus.environment, timeout: 30)
    }

    @Test func aFlatpakCallerGetsAccessDeniedAndAHostCallerDoesNot() throws {
        let stack = try Stack("A")
        try stack.set("DeviceName", .string("Host only"))
        let host = try callFromRoot(stack, flatpak: false)
        #expect(host.exitCode == 0 && host.stdout.contains("Host only"), "\(host.stdout)\(host.stderr)")
        let confined = try callFromRoot(stack, flatpak: true)
        #expect(confined.exitCode != 0, "\(confined.stdout)")
        #expect(confined.stderr.contains("org.example.UserActivity.Error.AccessDenied"), "\(confined.stderr)")
    }
}
