// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport

/// The Python peers of `Peers/`: TLS clients that speak the frame format
/// through one shared module (`handoff_peer.py`), which alone knows how a
/// paired device authenticates.
enum PeerScripts {
    static let directory = repositoryRoot() + "/Tests/HandoffTests/Peers"

    /// The path of the peer script `name` (run with python3; it imports its neighbours).
    static func path(_ name: String) -> String { directory + "/" + name }

    /// A device's handoff state directory: the identity a peer presents as that device.
    static func identity(of stack: Stack) -> String { stack.session.stateHome + "/useractivity/handoff" }
}
