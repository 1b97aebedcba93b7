// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two network namespaces joined by a veth pair, nothing else in them: a
/// link between two stacks that is a real interface rather than loopback,
/// for the transfer measurements. Addresses `10.232.<n>.1` and `.2`, with
/// `<n>` random, only inside the namespaces created here; ``tearDown()``
/// (also from deinit) deletes them. Needs root.
final class VethLink: @unchecked Sendable {
    let namespaces: [String]
    let addresses: [String]

    static var skipReason: String? {
        geteuid() != 0 ? "needs root to create network namespaces" : nil
    }

    init() throws {
        let tag = "\(getpid() % 100_000)-\(UInt16.random(in: 0...0xFFFF))"
        let subnet = Int.random(in: 1...254)
        namespaces = ["uaveth-\(tag)-a", "uaveth-\(tag)-b"]
        addresses = ["10.232.\(subnet).1", "10.232.\(subnet).2"]
        let interfaces = ["uavt\(tag.suffix(4))a", "uavt\(tag.suffix(4))b"]
        do {
            for name in namespaces { try Self.ip(["netns", "add", name]) }
            try Self.ip(["link", "add", interfaces[0], "netns", namespaces[0], "type", "veth", "peer", "name", interfaces[1], "netns", namespaces[1]])
            for index in 0..<2 {
                try Self.ip(["-n", namespaces[index], "addr", "add", addresses[index] + "/24", "dev", interfaces[index]])
                try Self.ip(["-n", namespaces[index], "link", "set", "lo", "up"])
                try Self.ip(["-n", namespaces[index], "link", "set", interfaces[index], "up"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    /// The command line that runs `executable` in namespace `index` (`ip netns exec` execs it: the PID is the program's).
    func commandLine(in index: Int, _ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("ip", ["netns", "exec", namespaces[index], executable] + arguments)
    }

    /// handoffd of stack `index` in its namespace, on its end of the link.
    func placement(_ index: Int) -> HandoffStack.Placement {
        HandoffStack.Placement(listen: "\(addresses[index]):0", systemBusAddress: nil) { [self] executable, arguments, environment in
            let (tool, all) = commandLine(in: index, executable, arguments)
            return try ChildProcess(executable: tool, arguments: all, environment: environment.merging(["PATH": standardSearchPath]) { old, _ in old },
                                    stdout: .capture, stderr: .capture)
        }
    }

    func tearDown() {
        for name in namespaces { _ = try? Self.ip(["netns", "del", name]) }
    }

    @discardableResult
    private static func ip(_ arguments: [String]) throws -> CommandResult {
        let result = try runCommand("ip", arguments, environment: ["PATH": standardSearchPath], timeout: 20)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return result
    }
}
