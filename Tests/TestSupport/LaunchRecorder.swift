// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A stand-in for an app the daemon launches from its desktop entry: a shell
/// script that writes the arguments it was given and its launch variables to
/// a file, so a test can tell exactly how the app was started.
///
/// Put `command(recordingTo:)` in a desktop entry's `Exec=`, followed by the
/// field code under test. The record holds one `ARG <argument>` line per
/// argument, then `XDG_ACTIVATION_TOKEN=…` and `DESKTOP_STARTUP_ID=…`. It is
/// renamed into place, so a reader never sees half of it.
public struct LaunchRecorder: Sendable {
    /// The script's path.
    public let script: String

    /// Writes the script into `directory`.
    public init(directory: String) throws {
        script = directory + "/record-launch.sh"
        try writeFileAtomically(script, contents: """
            #!/bin/sh
            out="$1"; shift
            { for a in "$@"; do printf 'ARG %s\\n' "$a"; done
              printf 'XDG_ACTIVATION_TOKEN=%s\\n' "$XDG_ACTIVATION_TOKEN"
              printf 'DESKTOP_STARTUP_ID=%s\\n' "$DESKTOP_STARTUP_ID"; } > "$out.tmp.$$"
            mv "$out.tmp.$$" "$out"

            """, mode: 0o755)
    }

    /// The words of an `Exec=` that records into `record` (field code not included).
    /// Paths with spaces or quotes are not supported: tests choose their own.
    public func command(recordingTo record: String) -> [String] { ["/bin/sh", script, record] }

    /// The lines `record` holds once written; nil when nothing was launched within `timeout` seconds.
    public static func read(_ record: String, timeout: Double = 20) -> [String]? {
        var lines: [String]?
        _ = waitUntil(timeout: timeout) {
            lines = (try? String(contentsOfFile: record, encoding: .utf8)).map { $0.split(separator: "\n").map(String.init) }
            return lines != nil
        }
        return lines
    }
}
