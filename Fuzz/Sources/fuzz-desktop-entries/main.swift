// SPDX-License-Identifier: Apache-2.0
// Desktop entries → AppCatalog.load (GLib's GKeyFile, precedence, team rule).
import FuzzDriver
import FuzzGenerators

FuzzDriver.run { bytes in
    var input = FuzzInput(bytes: bytes)
    return ParserProperties.checkDesktopEntries(&input, scratch: FuzzDriver.scratch + "/apps", loadKeyFile: FuzzDriver.keyFileLoader)
}
