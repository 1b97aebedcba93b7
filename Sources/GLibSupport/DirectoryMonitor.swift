// SPDX-License-Identifier: Apache-2.0
import CGLib

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
public final class DirectoryMonitor {
    private struct Watch {
        var monitor: UnsafeMutablePointer<GFileMonitor>
        var handler: gulong
    }

    private let context: OpaquePointer
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
        updateWatches()
    }

    deinit {
        if let pendingTimeout {
            g_source_destroy(pendingTimeout)
            g_source_unref(pendingTimeout)
        }
        for watch in watches.values { Self.release(watch) }
        g_main_context_unref(context)
    }

    /// The directories currently watched (the requested ones that exist, their
    /// subdirectories, and the nearest existing ancestors of missing ones);
    /// for logs and tests.
    public var watchedPaths: [String] { watches.keys.sorted() }

    // MARK: - Watches

    private func updateWatches() {
        let desired = desiredPaths()
        for (path, watch) in watches where !desired.contains(path) {
            Self.release(watch)
            watches[path] = nil
        }
        let missing = desired.filter { watches[$0] == nil }
        guard !missing.isEmpty else { return }
        withOwnContextAsThreadDefault {
            for path in missing {
                if let watch = makeWatch(path) { watches[path] = watch }
            }
        }
    }

    private func makeWatch(_ path: String) -> Watch? {
        let file = g_file_new_for_path(path)
        defer { g_object_unref(UnsafeMutableRawPointer(file)) }
        var error: UnsafeMutablePointer<GError>?
        guard let monitor = g_file_monitor_directory(file, G_FILE_MONITOR_NONE, nil, &error) else {
            // The directory vanished in between: the parent's watch reports it.
            g_clear_error(&error)
            return nil
        }
        let changed: @convention(c) (UnsafeMutablePointer<GFileMonitor>?, OpaquePointer?, OpaquePointer?,
                                     GFileMonitorEvent, gpointer?) -> Void = { _, _, _, _, data in
            guard let data else { return }
            Unmanaged<DirectoryMonitor>.fromOpaque(data).takeUnretainedValue().scheduleNotification()
        }
        // Unretained: deinit disconnects the handler before the monitor goes.
        let handler = cglib_signal_connect(UnsafeMutableRawPointer(monitor), "changed",
                                           unsafeBitCast(changed, to: GCallback.self),
                                           Unmanaged.passUnretained(self).toOpaque(), nil)
        return Watch(monitor: monitor, handler: handler)
    }

    private static func release(_ watch: Watch) {
        g_signal_handler_disconnect(UnsafeMutableRawPointer(watch.monitor), watch.handler)
        g_file_monitor_cancel(watch.monitor)
        g_object_unref(UnsafeMutableRawPointer(watch.monitor))
    }

    /// GIO attaches a new monitor to the thread-default context, which inside
    /// a plain `g_main_loop_run` of a non-default context is not ours.
    private func withOwnContextAsThreadDefault(_ body: () -> Void) {
        let current = g_main_context_ref_thread_default()
        defer { g_main_context_unref(current) }
        if current == context {
            body()
        } else {
            g_main_context_push_thread_default(context)
            body()
            g_main_context_pop_thread_default(context)
        }
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
