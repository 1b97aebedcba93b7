// SPDX-License-Identifier: Apache-2.0

/// `/etc/machine-info` (systemd's hostnamectl): the default DeviceName.
public enum MachineInfo {
    /// `PRETTY_HOSTNAME=` of the file's text, unquoted (shell-style: one pair
    /// of single or double quotes, backslash escapes inside double quotes).
    public static func prettyHostName(fromMachineInfo text: String) -> String? {
        for raw in text.split(separator: "\n") {
            let line = raw.drop { $0 == " " || $0 == "\t" }
            guard line.hasPrefix("PRETTY_HOSTNAME=") else { continue }
            var value = Substring(line.dropFirst("PRETTY_HOSTNAME=".count))
            if let quote = value.first, quote == "\"" || quote == "'", value.count >= 2, value.last == quote {
                value = value.dropFirst().dropLast()
                if quote == "\"" {
                    var out = ""
                    var escaping = false
                    for character in value {
                        if escaping || character != "\\" { out.append(character); escaping = false } else { escaping = true }
                    }
                    return out.isEmpty ? nil : out
                }
            }
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }
}
