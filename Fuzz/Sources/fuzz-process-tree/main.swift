// SPDX-License-Identifier: Apache-2.0
// /proc/PID trees with .flatpak-info, cgroup and mountinfo → ProcessIdentityProbe.identify.
import FuzzDriver
import FuzzGenerators

FuzzDriver.run { bytes in
    var input = FuzzInput(bytes: bytes)
    return ParserProperties.checkProcessTree(&input, procRoot: FuzzDriver.scratch + "/proc", loadKeyFile: FuzzDriver.keyFileLoader)
}
