// SPDX-License-Identifier: Apache-2.0
import CGLib

/// The process's heap, as the C library manages it.
public enum Memory {
    /// Returns freed heap memory to the system (`malloc_trim(0)`). glibc
    /// keeps freed pages mapped for reuse, so without this a daemon's
    /// resident size stays at its peak after a large free.
    public static func returnFreedMemory() {
        _ = malloc_trim(0)
    }
}
