// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import GLibSupport

/// Measurement only: with `USERACTIVITY_SETTINGS_TRACE` naming a file, the
/// History page appends one line per step of a search's way, `step
/// monotonic-µs query`: `typed` (the entry's text changed), `sent` (the
/// Search call left), `reply` (its answer arrived), `model` (the list model
/// holds the results) and `painted` (the next frame after that was drawn,
/// query-less). Monotonic time is CLOCK_MONOTONIC, the same clock a
/// benchmark reads. Without the variable nothing is written.
final class SearchTrace {
    private let fd: Int32
    private let scheduler: Scheduler

    init?(scheduler: Scheduler) {
        guard let path = getenv("USERACTIVITY_SETTINGS_TRACE"), path.pointee != 0 else { return nil }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.scheduler = scheduler
    }

    deinit { close(fd) }

    func mark(_ step: String, _ query: String = "") {
        let line = Array("\(step) \(scheduler.monotonic) \(query)\n".utf8)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
