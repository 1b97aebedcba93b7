// SPDX-License-Identifier: Apache-2.0
import CGLib
import Foundation
import GLibSupport
import Testing
@testable import UserActivityCore

/// Identity through a real pidfd of a child process, as `ProcessFD` from
/// `GetConnectionCredentials` would give one.
@Suite struct ProcessFDTests {
    @Test func identifiesThroughARealPidfd() throws {
        let catalog = AppCatalog(apps: [])
        let probe = ProcessIdentityProbe(loadKeyFile: glibLoader)
        var child: pid_t = 0
        var arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("60"), nil]
        defer { for argument in arguments { free(argument) } }
        #expect(posix_spawn(&child, "/bin/sleep", nil, nil, &arguments, environ) == 0)
        let fd = pidfd_open(child, 0)
        try #require(fd >= 0, "pidfd_open: errno \(errno)")
        defer { close(fd) }

        #expect(ProcessIdentityProbe.pid(ofProcessFD: fd) == child)
        let alive = probe.identify(processFD: fd, catalog: catalog)
        if access("/.flatpak-info", F_OK) != 0 {
            #expect(alive.confinement == .host, "\(alive)")
        }
        #expect(alive.source.hasSuffix("(by pidfd)"), "\(alive.source)")

        // Once the process has exited and been reaped, its PID may be anyone's: the pidfd says so.
        kill(child, SIGKILL)
        var status: Int32 = 0
        #expect(waitpid(child, &status, 0) == child)
        #expect(ProcessIdentityProbe.pid(ofProcessFD: fd) == -1)
        let gone = probe.identify(processFD: fd, catalog: catalog)
        #expect(gone.isConfined && gone.appID == nil, "\(gone)")
        #expect(gone.source.contains("has exited"), "\(gone.source)")

        // A descriptor that is not a pidfd identifies nobody.
        let null = open("/dev/null", O_RDONLY)
        defer { close(null) }
        #expect(ProcessIdentityProbe.pid(ofProcessFD: null) == nil)
        #expect(probe.identify(processFD: null, catalog: catalog).isConfined)
    }
}
