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

    /// Lets up to `bytes` of free memory stay at the top of the heap instead
    /// of going back to the system on every `free` (glibc's default is
    /// 128 KiB, after which it also adjusts the threshold itself).
    ///
    /// Why: a call that allocates a little more than that and frees it
    /// again shrank and regrew the heap each time, and every page that came
    /// back was a page fault to zero it: about 8 per Donate, a fifth of its
    /// CPU. ``returnFreedMemory()`` still trims after large frees.
    public static func keepFreedHeapTop(bytes: Int32) {
        _ = mallopt(CGLIB_M_TRIM_THRESHOLD, bytes)
    }
}
