// SPDX-License-Identifier: Apache-2.0

/// The project's version: the daemon's `Version` property and `--version`,
/// and `useractivityctl --version` (the CLI ships with the daemon).
/// `packaging/stage-source.sh` checks it against debian/changelog and the RPM spec.
public enum UserActivityVersion {
    public static let current = "0.1.0"
}
