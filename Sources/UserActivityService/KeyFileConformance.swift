// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import UserActivityCore

// GLibSupport does not know the core: the conformance is stated where both meet.
extension GLibKeyFile: KeyFileReading {}
