// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport

/// Two network namespaces joined by a veth pair, nothing else in them: a
/// link between two stacks that is a real interface rather than loopback,
/// for the transfer measurements. Addresses `10.232.<n>.1` and `.2`, with
/// `<n>` random, only inside the namespaces created here; namespaces are
/// named `uaveth-<pid>-…` and deleted by ``tearDown()`` (also from deinit)
/// or, when a killed run left them, by the next set-up. Needs root.
final class VethLink: @unchecked Sendable {
    static let prefix = "uaveth-"
    private let pair: VethNamespacePair

    var namespaces: [String] { pair.namespaces }
    /// Stack `index`'s address.
    var addresses: [String] { pair.addresses.map { $0[0] } }

    static var skipReason: String? { VethNamespacePair.skipReason }

    init() throws {
        pair = try VethNamespacePair(prefix: Self.prefix, interfacePrefix: "uavt", sides: ("a", "b"), network: "10.232", hosts: ([1], [2]))
    }

    /// The command line that runs `executable` in namespace `index` (`ip netns exec` execs it: the PID is the program's).
    func commandLine(in index: Int, _ executable: String, _ arguments: [String]) -> (String, [String]) {
        pair.commandLine(in: index, executable, arguments)
    }

    /// handoffd of stack `index` in its namespace, on its end of the link.
    func placement(_ index: Int) -> HandoffStack.Placement {
        HandoffStack.Placement(listen: "\(addresses[index]):0", systemBusAddress: nil) { [self] executable, arguments, environment in
            try pair.spawn(in: index, executable, arguments, environment: environment)
        }
    }

    func tearDown() { pair.tearDown() }
}
