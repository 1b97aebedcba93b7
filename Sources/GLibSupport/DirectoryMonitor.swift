// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif

/// Calls a closure when anything changes in a set of directories, including
/// directories that do not exist yet.
///
/// Built for desktop-entry directories: a package manager writes many files
/// at once, so events are coalesced and the closure runs once, a short delay
/// after the first event, on the main context that was the thread-default
/// when the monitor was created. `~/.local/share/applications` often does
/// not exist until the first app is installed there, so a missing directory
/// is covered by watching its nearest existing ancestor and moving the watch
/// down when the directory appears.
///
/// ```swift
/// let monitor = DirectoryMonitor(directories: AppCatalog.applicationDirectories(environment: env)) {
///     catalog = AppCatalog.load(applicationDirectories: dirs, loadKeyFile: loader)
/// }
/// ```
///
/// Create, use and release it on the thread that runs its context: GLib
/// delivers its events there, and nothing here is locked.
///
/// inotify directly (one descriptor, one GLib fd source) rather than
/// `GFileMonitor`: the events are only a hint to re-read, and GIO's monitor
/// machinery (its worker thread, type system and file classes) would be the
/// largest part of GIO the daemon touches while idle.
public final class DirectoryMonitor {
    /// inotify watch descriptors by path; two paths naming one directory share one.
    private typealias Watch = Int32

    private let context: OpaquePointer
    /// The inotify descriptor; -1 when inotify is unavailable (then nothing is watched).
    private let inotify: Int32
    private var inotifySource: UnsafeMutablePointer<GSource>?
    private let directories: [String]
    private let recursive: Bool
    private let debounceMilliseconds: UInt32
    private let onChange: () -> Void
    private var watches: [String: Watch] = [:]
    private var pendingTimeout: UnsafeMutablePointer<GSource>?

    /// Subdirectory limits: a bound on inotify watches for a pathological tree.
    private static let maximumDepth = 8
    private static let maximumWatches = 512

    /// Starts watching at once.
    ///
    /// - Parameters:
    ///   - directories: paths to watch; they need not exist.
    ///   - recursive: also watch existing subdirectories (desktop-file IDs
    ///     include subdirectories, `vendor/foo.desktop` → `vendor-foo`).
    ///   - debounceMilliseconds: delay between the first event of a burst and
    ///     the call, so one package installation causes one reload.
    ///   - onChange: called on the monitor's context after changes.
    public init(directories: [String], recursive: Bool = true, debounceMilliseconds: UInt32 = 300,
                onChange: @escaping () -> Void) {
        self.context = g_main_context_ref_thread_default()
        self.directories = directories.map(Self.normalized)
        self.recursive = recursive
        self.debounceMilliseconds = debounceMilliseconds
        self.onChange = onChange
        self.inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if inotify >= 0 { attachInotifySource() }
        updateWatches()
    }

    deinit {
        if let pendingTimeout {
            g_source_destroy(pendingTimeout)
            g_source_unref(pendingTimeout)
        }
        if let inotifySource {
            g_source_destroy(inotifySource)
            g_source_unref(inotifySource)
        }
        // Closing the descriptor drops every watch with it.
        if inotify >= 0 { close(inotify) }
        g_main_context_unref(context)
    }

    /// The directories currently watched (the requested ones that exist, their
    /// subdirectories, and the nearest existing ancestors of missing ones);
    /// for logs and tests.
    public var watchedPaths: [String] { watches.keys.sorted() }

    // MARK: - Watches

    private func updateWatches() {
        guard inotify >= 0 else { return }
        let desired = desiredPaths()
        for (path, watch) in watches where !desired.contains(path) {
            watches[path] = nil
            // The kernel hands out one descriptor per directory, whatever the path.
            if !watches.values.contains(watch) { inotify_rm_watch(inotify, watch) }
        }
        for path in desired where watches[path] == nil {
            if let watch = makeWatch(path) { watches[path] = watch }
        }
    }

    /// What counts as a change: entries appearing, going, being written or
    /// renamed, and the directory itself going (then the parent takes over).
    private static let eventMask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
                                          | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
                                   | UInt32(IN_ONLYDIR)

    private func makeWatch(_ path: String) -> Watch? {
        let watch = inotify_add_watch(inotify, path, Self.eventMask)
        // The directory vanished in between (the parent's watch reports it),
        // or the user's inotify watch limit is reached: nothing to do but skip.
        return watch >= 0 ? watch : nil
    }

    private func attachInotifySource() {
        guard let source = g_unix_fd_source_new(inotify, GIOCondition(G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue)) else { return }
        let readable: @convention(c) (gint, GIOCondition, gpointer?) -> gboolean = { _, _, data in
            guard let data else { return CGLIB_SOURCE_REMOVE }
            return Unmanaged<DirectoryMonitor>.fromOpaque(data).takeUnretainedValue().drainEvents()
        }
        // Unretained: deinit destroys the source, so it never fires afterwards.
        g_source_set_callback(source, unsafeBitCast(readable, to: GSourceFunc.self),
                              Unmanaged.passUnretained(self).toOpaque(), nil)
        g_source_attach(source, context)
        inotifySource = source
    }

    /// Reads every queued event (their content does not matter: any event,
    /// an overflow included, means "re-read soon") and schedules the call.
    private func drainEvents() -> gboolean {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var sawEvent = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count > 0 { sawEvent = true; continue }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            // EOF or a hard error: the descriptor is useless; stop polling it.
            if sawEvent { scheduleNotification() }
            return CGLIB_SOURCE_REMOVE
        }
        if sawEvent { scheduleNotification() }
        return CGLIB_SOURCE_CONTINUE
    }

    private func desiredPaths() -> Set<String> {
        var result = Set<String>()
        for directory in directories {
            if Self.isDirectory(directory) {
                result.insert(directory)
                if recursive { addSubdirectories(of: directory, depth: 1, to: &result) }
            } else {
                var ancestor = Self.parent(of: directory)
                while let path = ancestor, !Self.isDirectory(path) { ancestor = Self.parent(of: path) }
                if let ancestor { result.insert(ancestor) }
            }
        }
        return result
    }

    private func addSubdirectories(of directory: String, depth: Int, to result: inout Set<String>) {
        guard depth <= Self.maximumDepth, let dir = g_dir_open(directory, 0, nil) else { return }
        defer { g_dir_close(dir) }
        while let entry = g_dir_read_name(dir), result.count < Self.maximumWatches {
            let name = String(cString: entry)
            guard !name.hasPrefix(".") else { continue }
            let path = directory == "/" ? "/" + name : directory + "/" + name
            // Symlinked directories are followed by the catalog but not here,
            // to stay clear of loops; their targets are usually watched anyway.
            guard Self.isDirectory(path), g_file_test(path, G_FILE_TEST_IS_SYMLINK) == 0,
                  result.insert(path).inserted else { continue }
            addSubdirectories(of: path, depth: depth + 1, to: &result)
        }
    }

    // MARK: - Debounce

    private func scheduleNotification() {
        guard pendingTimeout == nil, let source = g_timeout_source_new(debounceMilliseconds) else { return }
        let fire: @convention(c) (gpointer?) -> gboolean = { data in
            guard let data else { return CGLIB_SOURCE_REMOVE }
            Unmanaged<DirectoryMonitor>.fromOpaque(data).takeUnretainedValue().timeoutFired()
            return CGLIB_SOURCE_REMOVE
        }
        // Unretained: deinit destroys the source, so it never fires afterwards.
        g_source_set_callback(source, fire, Unmanaged.passUnretained(self).toOpaque(), nil)
        g_source_attach(source, context)
        pendingTimeout = source
    }

    private func timeoutFired() {
        if let pendingTimeout {
            g_source_unref(pendingTimeout)
            self.pendingTimeout = nil
        }
        // Re-aim the watches before reporting, so that whatever the closure
        // reads was written either before it reads or under a live watch.
        updateWatches()
        onChange()
    }

    // MARK: - Paths

    private static func normalized(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private static func parent(of path: String) -> String? {
        guard path != "/", let slash = path.lastIndex(of: "/") else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func isDirectory(_ path: String) -> Bool {
        g_file_test(path, G_FILE_TEST_IS_DIR) != 0
    }
}
