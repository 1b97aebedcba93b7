// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import UserActivityCore

// GLibSupport may not depend on the core, so the conformance is declared
// where both are visible; the service module declares the same one.
extension GLibKeyFile: KeyFileReading {}

/// The key-file parser the service uses, for tests that read real files.
let glibLoader: KeyFileLoader = { GLibKeyFile.load(path: $0) }
