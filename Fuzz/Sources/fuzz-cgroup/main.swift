// SPDX-License-Identifier: Apache-2.0
// /proc/PID/cgroup lines → ProcessIdentityProbe's static parsers.
import FuzzDriver
import FuzzGenerators
import UserActivityCore

FuzzDriver.run { bytes in
    // Structured cgroup files from the bytes, and the bytes themselves as a file.
    var input = FuzzInput(bytes: bytes)
    let raw = String(decoding: bytes, as: UTF8.self)
    for unit in ProcessIdentityProbe.unitNames(fromCgroup: raw) {
        _ = ProcessIdentityProbe.appIDCandidates(fromUnitName: unit)
    }
    _ = ProcessIdentityProbe.snapName(fromCgroup: raw)
    return ParserProperties.checkCgroup(&input)
}
