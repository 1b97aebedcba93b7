// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `ip` for the tests that make network namespaces of their own (root only).
/// Their names start with a prefix of the test's, then the creating
/// process's PID: ``deleteStale(prefix:)`` deletes those a killed run left.
public enum NetworkNamespaceTools {
    /// Runs `ip` with `arguments`; throws when it fails.
    @discardableResult
    public static func ip(_ arguments: [String]) throws -> CommandResult {
        let result = try runCommand("ip", arguments, environment: ["PATH": standardSearchPath], timeout: 20)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return result
    }

    /// Deletes `<prefix><pid>-…` namespaces whose creating process is gone.
    public static func deleteStale(prefix: String) {
        guard let list = try? runCommand("ip", ["netns", "list"], environment: ["PATH": standardSearchPath]) else { return }
        for line in list.stdout.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix(prefix) else { continue }
            let pidText = name.dropFirst(prefix.count).split(separator: "-").first.map(String.init) ?? ""
            guard let pid = Int32(pidText), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = try? ip(["netns", "del", name])
        }
    }
}
