// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import GLibSupport
import Logging
import TypedValues
import UserActivityCore

/// The privacy settings, their file, and their effects on the store.
///
/// The file and the D-Bus properties agree: a `Set` writes the file, and an
/// edit of the file (watched) applies as if the properties had been set.
final class PrivacyControls {
    private(set) var settings = PrivacySettings()
    private let directory: String?
    private let store: ActivityStore
    private let log: Logger
    private let clock: () -> Int64
    private var monitor: DirectoryMonitor?
    private var retentionTimer: ScheduledWork?
    /// Called with the names of properties whose values changed.
    var onChange: (([String]) -> Void)?
    /// Runs before the settings change or the store is trimmed by them (the owner writes what is still waiting).
    var beforeChange: () -> Void = {}
    /// Runs after the settings deleted saved activities (blocking, retention, the per-app limit).
    var storeChanged: () -> Void = {}

    static let fileName = "useractivity.conf"
    var filePath: String? { directory.map { $0 + "/" + Self.fileName } }

    init(directory: String?, store: ActivityStore, clock: @escaping () -> Int64, log: Logger) {
        self.directory = directory
        self.store = store
        self.clock = clock
        self.log = log
        if let loaded = readFile() { settings = loaded }
    }

    /// Starts watching the file and the retention timer (on the loop's thread,
    /// which also runs `scheduler`'s work).
    func start(scheduler: Scheduler) {
        if let directory {
            monitor = DirectoryMonitor(directories: [directory], recursive: false) { [unowned self] in
                guard let loaded = readFile(), loaded != settings else { return }
                log.info("privacy settings changed on disk; applying them")
                apply(loaded)
            }
        }
        enforceRetention()
        trimIfNeeded(previous: nil)
        armRetentionTimer(scheduler)
    }

    /// Hourly is plenty for a limit counted in days. The scheduler's work is
    /// one-shot, so each run arms the next.
    private func armRetentionTimer(_ scheduler: Scheduler) {
        retentionTimer = scheduler.after(milliseconds: 3_600_000) { [unowned self] in
            enforceRetention()
            armRetentionTimer(scheduler)
        }
    }

    private func readFile() -> PrivacySettings? {
        guard let path = filePath, let file = GLibKeyFile.load(path: path) else { return nil }
        let (loaded, warnings) = PrivacySettings.load(from: file)
        for warning in warnings { log.warning("\(path): \(warning)") }
        return loaded
    }

    /// Sets one property from D-Bus: validated, written to the file, applied.
    func set(_ property: String, to value: TypedValue) throws {
        var updated = settings
        try updated.set(property, to: value)
        guard updated != settings else { return }
        if let directory, let path = filePath {
            do {
                try makeDirectory(directory, mode: 0o700)
                try replaceFileContents(path, contents: updated.serialized(), mode: 0o600)
            } catch {
                throw UserActivityError(.storageFailed, "the privacy settings could not be saved: \(error); nothing was changed")
            }
        }
        apply(updated)
    }

    /// Makes `updated` the settings and carries out what they ask of the store.
    private func apply(_ updated: PrivacySettings) {
        beforeChange()
        let previous = settings
        settings = updated
        let changed = PrivacySettings.propertyNames.filter { previous.value(of: $0) != updated.value(of: $0) }
        do {
            for app in updated.blockedApplications where !previous.blockedApplications.contains(app) {
                let deleted = try store.deleteAll(appID: app)
                log.info("blocked app: deleted its saved activities", metadata: ["app": "\(app)", "deleted": "\(deleted)"])
                if deleted > 0 { _ = try? store.scrubDeletedContent(); storeChanged() }
            }
            for type in updated.blockedActivityTypes where !previous.blockedActivityTypes.contains(type) {
                let deleted = try store.deleteAll(activityType: type)
                log.info("blocked type: deleted its saved activities", metadata: ["type": "\(type)", "deleted": "\(deleted)"])
                if deleted > 0 { _ = try? store.scrubDeletedContent(); storeChanged() }
            }
        } catch {
            log.error("applying privacy settings: \(error)")
        }
        if previous.retentionDays != updated.retentionDays { enforceRetention() }
        trimIfNeeded(previous: previous)
        if !changed.isEmpty { onChange?(changed) }
    }

    private func enforceRetention() {
        guard settings.retentionDays > 0 else { return }
        beforeChange()
        // Any u is a valid RetentionDays; one too long for Int64 µs keeps everything
        // (trapping here would crash every start, since the setting is kept on disk).
        let (span, spanOverflows) = Int64(settings.retentionDays).multipliedReportingOverflow(by: 86_400_000_000)
        let (cutoff, cutoffOverflows) = clock().subtractingReportingOverflow(span)
        guard !spanOverflows, !cutoffOverflows else { return }
        do {
            let deleted = try store.delete(lastUsedFrom: .min, to: cutoff)
            if deleted > 0 { log.info("retention: purged saved activities", metadata: ["deleted": "\(deleted)", "days": "\(settings.retentionDays)"]) }
            if deleted > 0 { _ = try? store.scrubDeletedContent(); storeChanged() }
        } catch {
            log.error("retention purge failed: \(error)")
        }
    }

    private func trimIfNeeded(previous: PrivacySettings?) {
        let limit = settings.maxSavedPerApplication
        guard limit > 0, previous == nil || previous!.maxSavedPerApplication == 0 || limit < previous!.maxSavedPerApplication else { return }
        do {
            let deleted = try store.trimAll(keeping: Int(limit))
            if deleted > 0 { log.info("per-app limit: deleted the oldest saved activities", metadata: ["deleted": "\(deleted)"]) }
            if deleted > 0 { _ = try? store.scrubDeletedContent(); storeChanged() }
        } catch {
            log.error("per-app limit: \(error)")
        }
    }

    /// After a save for `app`, keeps it within the per-app limit.
    func enforceLimit(app: String) throws {
        guard settings.maxSavedPerApplication > 0 else { return }
        try store.trim(appID: app, keeping: Int(settings.maxSavedPerApplication))
    }
}
