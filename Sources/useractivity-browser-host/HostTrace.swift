// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// Measurement only: with `USERACTIVITY_BROWSER_HOST_TRACE` naming a file,
/// the host appends one line per step of a page's way (`read`: bytes from
/// the browser arrived; `sent`: the Update and BecomeCurrent left for the
/// service) with the wall-clock time in microseconds, so that a benchmark can
/// split a tab switch's time at the host. Without it, nothing is written.
final class HostTrace {
    private let fd: Int32

    init?(environment: [String: String]) {
        guard let path = environment["USERACTIVITY_BROWSER_HOST_TRACE"], !path.isEmpty else { return nil }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    func mark(_ step: String) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let line = Array("\(step) \(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)\n".utf8)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
