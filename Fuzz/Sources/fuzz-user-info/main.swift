// SPDX-License-Identifier: Apache-2.0
// Properties and user-info values → ActivityPatch.parse/applied/mergingUserInfo, and codec round trips.
import FuzzDriver
import FuzzGenerators

FuzzDriver.run { bytes in
    var input = FuzzInput(bytes: bytes)
    return ParserProperties.checkUserInfo(&input)
}
