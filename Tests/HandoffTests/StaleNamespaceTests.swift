// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A run that is killed (an interrupted `swift test`) leaves its network
/// namespaces behind; the next set-up of the same kind deletes those whose
/// creating process is gone, and only those.
@Suite("Namespaces a killed run left are deleted by the next set-up", .serialized,
       .enabled(if: VethNamespacePair.skipReason == nil, "\(VethNamespacePair.skipReason ?? "")"))
struct StaleNamespaceTests {
    /// The PID of a process that has exited and been reaped.
    func deadPID() throws -> pid_t {
        for _ in 0..<10 {
            let process = try ChildProcess(executable: "/bin/true", arguments: [], environment: ["PATH": standardSearchPath],
                                           stdout: .capture, stderr: .capture)
            guard process.waitForExit(timeout: 30) != nil else { continue }
            if kill(process.pid, 0) != 0 && errno == ESRCH { return process.pid }
        }
        throw HandoffTestFailure("no PID stayed free")
    }

    @Test("VethLink and HostileLAN: a dead PID's namespace goes; the test process's, a live child's and another scheme's stay",
          arguments: ["VethLink", "HostileLAN"])
    func setUpDeletesOnlyTheDeadRunsNamespaces(_ kind: String) throws {
        let prefix = kind == "VethLink" ? VethLink.prefix : HostileLAN.prefix
        let sleeper = try ChildProcess(executable: "sleep", arguments: ["600"], environment: ["PATH": standardSearchPath],
                                       stdout: .capture, stderr: .capture)
        defer { sleeper.terminate(grace: 0.5) }
        let dead = try deadPID()
        let mark = UInt16.random(in: 0...0xFFFF)
        let stale = "\(prefix)\(dead)-\(mark)-a"
        let kept = ["\(prefix)\(getpid())-\(mark)-a", "\(prefix)\(sleeper.pid)-\(mark)-a", "uakept-\(dead)-\(mark)-a"]
        defer { for name in [stale] + kept { _ = try? NetworkNamespaceTools.ip(["netns", "del", name]) } }
        for name in [stale] + kept { try NetworkNamespaceTools.ip(["netns", "add", name]) }
        #expect(Set(NetworkNamespaceTools.namespaces()).isSuperset(of: [stale] + kept))

        if kind == "VethLink" {
            let link = try VethLink()
            link.tearDown()
        } else {
            let lan = try HostileLAN(strangers: 0)
            lan.tearDown()
        }

        let after = Set(NetworkNamespaceTools.namespaces())
        #expect(!after.contains(stale), "\(after.sorted())")
        #expect(after.isSuperset(of: kept), "\(after.sorted())")
    }
}
