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

    /// The namespaces `ip netns list` shows.
    public static func namespaces() -> [String] {
        guard let list = try? runCommand("ip", ["netns", "list"], environment: ["PATH": standardSearchPath]) else { return [] }
        // A line is the name, then ` (id: N)` once the namespace has one.
        return list.stdout.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
    }

    /// Deletes `<prefix><pid>-…` namespaces whose creating process is gone:
    /// never one of a live process, never one named otherwise.
    public static func deleteStale(prefix: String) {
        for name in namespaces() where name.hasPrefix(prefix) {
            let pidText = name.dropFirst(prefix.count).split(separator: "-", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            // kill(pid, 0) fails with EPERM, not ESRCH, for a live process of another user.
            guard let pid = Int32(pidText), pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = try? ip(["netns", "del", name])
        }
    }
}

/// Two network namespaces joined by a veth pair, loopback and the pair up
/// in each, nothing else in them. Named `<prefix><pid>-<n>-<side>` (`<n>`
/// random); a set-up first deletes those of its prefix that a killed run
/// left (``NetworkNamespaceTools/deleteStale(prefix:)``). Addresses are
/// `<network>.<subnet>.<host>/24`, `<subnet>` random, only inside the
/// namespaces made here. ``tearDown()`` (also from deinit) deletes both.
public final class VethNamespacePair: @unchecked Sendable {
    public let namespaces: [String]
    public let interfaces: [String]
    /// Each side's addresses in the order they were added: a side's
    /// connections come from its first unless bound elsewhere.
    public let addresses: [[String]]

    /// Why a test cannot make one here (nil: it can).
    public static var skipReason: String? {
        geteuid() != 0 ? "needs root to create network namespaces (CI runs the tests as root)" : nil
    }

    /// `sides` names the two ends (the last character of each namespace and
    /// interface name), `hosts` the last byte of each side's addresses.
    public init(prefix: String, interfacePrefix: String, sides: (String, String), network: String, hosts: ([Int], [Int])) throws {
        NetworkNamespaceTools.deleteStale(prefix: prefix)
        let tag = "\(getpid())-\(UInt16.random(in: 0...0xFFFF))"
        let subnet = "\(network).\(Int.random(in: 1...254))"
        let ends = [sides.0, sides.1]
        namespaces = ends.map { prefix + tag + "-" + $0 }
        // Interface names have at most 15 bytes.
        interfaces = ends.map { String((interfacePrefix + tag.suffix(4) + $0).suffix(15)) }
        addresses = [hosts.0, hosts.1].map { $0.map { "\(subnet).\($0)" } }
        do {
            for name in namespaces { try NetworkNamespaceTools.ip(["netns", "add", name]) }
            try NetworkNamespaceTools.ip(["link", "add", interfaces[0], "netns", namespaces[0], "type", "veth",
                                          "peer", "name", interfaces[1], "netns", namespaces[1]])
            for side in 0..<2 {
                for address in addresses[side] {
                    try NetworkNamespaceTools.ip(["-n", namespaces[side], "addr", "add", address + "/24", "dev", interfaces[side]])
                }
                try NetworkNamespaceTools.ip(["-n", namespaces[side], "link", "set", "lo", "up"])
                try NetworkNamespaceTools.ip(["-n", namespaces[side], "link", "set", interfaces[side], "up"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    /// The command line that runs `executable` in namespace `side` (`ip netns exec` execs it: the PID is the program's).
    public func commandLine(in side: Int, _ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("ip", ["netns", "exec", namespaces[side], executable] + arguments)
    }

    /// Starts `executable` in namespace `side`; `environment` goes over a standard `PATH`.
    public func spawn(in side: Int, _ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        let (tool, all) = commandLine(in: side, executable, arguments)
        return try ChildProcess(executable: tool, arguments: all, environment: ["PATH": standardSearchPath].merging(environment) { $1 },
                                stdout: .capture, stderr: .capture)
    }

    /// Deletes both namespaces (idempotent).
    public func tearDown() {
        for name in namespaces { _ = try? NetworkNamespaceTools.ip(["netns", "del", name]) }
    }
}
