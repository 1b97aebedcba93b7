// SPDX-License-Identifier: Apache-2.0
import CGLib

/// The process environment as a dictionary: what `ProcessInfo` would give,
/// for the daemons, which do not link Foundation.
///
/// An entry without `=` is not a variable and is left out; of a repeated
/// name, the later entry wins.
public func processEnvironment() -> [String: String] {
    var environment: [String: String] = [:]
    guard let entries = g_get_environ() else { return environment }
    defer { g_strfreev(entries) }
    var index = 0
    while let pointer = entries[index] {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") {
            environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        index += 1
    }
    return environment
}
