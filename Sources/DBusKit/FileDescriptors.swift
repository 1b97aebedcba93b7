// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import TypedValues

extension TypedValue {
    /// Closes every Unix file descriptor in `values`, at any depth (variants,
    /// arrays, structures, dictionaries). libdbus gives whoever reads a
    /// message a `dup()` of each descriptor in it: one that is neither kept
    /// nor closed stays open until the process runs out of descriptors.
    public static func closeFileDescriptors(in values: [TypedValue]) {
        for value in values { value.closeFileDescriptors() }
    }

    /// Closes every Unix file descriptor in this value, at any depth.
    public func closeFileDescriptors() {
        switch self {
        case .unixFD(let fd): if fd >= 0 { close(fd) }
        case .variant(let inner): inner.closeFileDescriptors()
        case .array(_, let elements), .structure(let elements): TypedValue.closeFileDescriptors(in: elements)
        case .dictionary(_, _, let entries):
            for entry in entries {
                entry.key.closeFileDescriptors()
                entry.value.closeFileDescriptors()
            }
        default: break
        }
    }

    /// This value with every file descriptor in it replaced by -1 (after
    /// they were closed: the numbers may already name other files).
    public func replacingFileDescriptors() -> TypedValue {
        switch self {
        case .unixFD: return .unixFD(-1)
        case .variant(let inner): return .variant(inner.replacingFileDescriptors())
        case .array(let type, let elements): return .array(elementType: type, elements.map { $0.replacingFileDescriptors() })
        case .structure(let elements): return .structure(elements.map { $0.replacingFileDescriptors() })
        case .dictionary(let key, let value, let entries):
            return .dictionary(keyType: key, valueType: value, entries.map {
                .init(key: $0.key.replacingFileDescriptors(), value: $0.value.replacingFileDescriptors())
            })
        default: return self
        }
    }

    /// Whether this value holds a file descriptor at any depth.
    public var containsFileDescriptor: Bool {
        switch self {
        case .unixFD: return true
        case .variant(let inner): return inner.containsFileDescriptor
        case .array(_, let elements), .structure(let elements): return elements.contains { $0.containsFileDescriptor }
        case .dictionary(_, _, let entries): return entries.contains { $0.key.containsFileDescriptor || $0.value.containsFileDescriptor }
        default: return false
        }
    }
}
