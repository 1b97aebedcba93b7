// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import GLibSupport
import Logging
import TypedValues
import UserActivityCore
#if canImport(Glibc)
import Glibc
#endif

/// The recent-files bridge: the documents GTK and KIO record in
/// `recently-used.xbel` become saved `open-document` activities of the apps
/// that recorded them (the rules are ``RecentFiles``'s).
///
/// On start the file is read and every entry not seen before is imported;
/// then its directory is watched and the file read again when it changes
/// (size, time or inode), importing only entries whose last use changed.
/// What was seen is kept in the store (``ActivityStore/bridgedStamps(source:)``),
/// so a restart does not import again, and an entry deleted by a privacy
/// control (forget, block, retention) or recorded while paused is not
/// brought back until the file records a new use of it.
///
/// Imports are written in batches of ``batchSize``, one transaction each,
/// from the loop's idle callbacks: calls on the bus are served between
/// batches, so a 10,000-entry first import never holds the loop for long.
final class RecentFilesBridge {
    let context: ServiceContext
    let path: String
    static let batchSize = 250
    /// GBookmarkFile reads the whole file into memory: a larger one is not
    /// read (GTK's own files stay far below, 10,000 entries are 4.7 MB).
    static let maximumFileBytes: Int64 = 64 << 20
    static let privacySchema = "org.gnome.desktop.privacy"

    private var monitor: DirectoryMonitor?
    /// The file as last read (size, mtime ns, inode); nil: read it next time.
    private var lastRead: (size: Int64, mtime: Int64, inode: UInt64)?
    /// Key hash → stamp, what the store has seen (loaded on first use).
    private var seen: [Int64: Int64]?
    private var watermark: Int64 = 0
    /// Changes waiting for their batch, and keys to forget after them.
    /// (The saved record is built when its batch is written: 10,000 at once would hold the loop.)
    private var queue: [(key: Int64, stamp: Int64, document: RecentDocument?)] = []
    private var queueStart = 0
    private var removals: [Int64] = []
    private var batch: ScheduledWork?
    /// The read after start (its own source: a batch queued meanwhile must not wait on it).
    private var firstRead: ScheduledWork?
    /// A read in progress on the worker thread, and whether the file changed meanwhile.
    private var isReading = false
    private var readAgain = false
    /// Bumped when the bridge stops or forgets: a read begun before is discarded.
    private var generation = 0
    /// Forget and delete calls made while a read was under way, applied to
    /// what that read queues (it read history those calls covered).
    private var droppedDuringRead: [(RecentDocument) -> Bool] = []
    /// Called (tests, logs) when the queue has been written.
    var onIdle: (() -> Void)?
    /// The document just opened, made current.
    let current: RecentDocumentPublisher
    /// Reads of the file finished and compared (tests wait on it).
    private(set) var completedReads = 0

    init(context: ServiceContext, path: String) {
        self.context = context
        self.path = path
        current = RecentDocumentPublisher(context: context)
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        monitor = DirectoryMonitor(directories: [directory.isEmpty ? "/" : directory], recursive: false) { [unowned self] in
            fileMayHaveChanged()
        }
        // After export: the name is taken and calls are served while this reads.
        firstRead = context.scheduler.whenIdle { [unowned self] in
            firstRead = nil
            fileMayHaveChanged()
        }
    }

    deinit {
        firstRead?.cancel()
        batch?.cancel()
    }

    var log: Logger { context.log }

    /// The `Bridges` setting and GNOME's `remember-recent-files` both allow it.
    var isOn: Bool {
        context.saved.privacy.settings.bridgeIsOn(RecentFiles.source)
            && DesktopSettings.boolean(schema: Self.privacySchema, key: "remember-recent-files") != false
    }

    /// The privacy settings changed: a bridge turned off drops its queue; one
    /// turned on reads the file again.
    func settingsChanged() {
        current.settingsChanged(bridgeIsOn: isOn)
        if isOn {
            if lastRead == nil { fileMayHaveChanged() }
        } else {
            stop()
        }
    }

    /// ForgetAll: nothing recorded up to `watermark` is imported again.
    func forgotten(watermark: Int64) {
        current.withdraw()
        stop()
        seen = [:]
        self.watermark = watermark
        if isOn { fileMayHaveChanged() }
    }

    /// A forget or delete call: the entries it covers that still wait for
    /// their batch are not saved. They stay stamped as seen, exactly as if
    /// they had been saved and then deleted, so only a new use brings them back.
    func dropQueued(where covered: @escaping (RecentDocument) -> Bool) {
        current.forgotten(where: covered)
        if isReading { droppedDuringRead.append(covered) }
        for index in queueStart..<queue.count {
            if let document = queue[index].document, covered(document) { queue[index].document = nil }
        }
    }

    private func stop() {
        generation += 1
        batch?.cancel()
        batch = nil
        queue = []
        queueStart = 0
        removals = []
        lastRead = nil
        // What was queued but not written must be looked at again.
        seen = nil
    }

    /// Reads the file when it changed and queues what is new.
    ///
    /// The file is read and turned into documents on a worker thread (a
    /// 10,000-entry file takes a while); only the comparison with what was
    /// seen and the queueing happen on the loop.
    func fileMayHaveChanged() {
        guard isOn else {
            log.debug("recent files: the bridge is off (Bridges, or GNOME's remember-recent-files)")
            return
        }
        guard !isReading else {
            readAgain = true
            return
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            lastRead = nil
            return
        }
        let signature = (size: Int64(info.st_size), mtime: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                         inode: UInt64(info.st_ino))
        if let lastRead, lastRead == signature { return }
        lastRead = signature
        guard signature.size <= Self.maximumFileBytes else {
            log.warning("recent files: \(path) is \(signature.size) bytes, more than the \(Self.maximumFileBytes) the bridge reads; ignored until it shrinks")
            return
        }
        let started = currentTimeMicroseconds()
        let path = self.path
        let catalog = context.catalog
        let home = context.configuration.homeDirectory
        let now = context.scheduler.now
        let maxAge = DesktopSettings.integer(schema: Self.privacySchema, key: "recent-files-max-age")
        let generation = self.generation
        isReading = true
        context.loop.inBackground(name: "recent-files", { () -> ReadOutcome in
            let entries: [RecentFileEntry]
            do {
                entries = try BookmarkFile.read(path: path)
            } catch {
                return .failure("\(error)")
            }
            // Oldest first: the store's last-use order then matches the file's.
            let documents = RecentFiles.documents(entries, matcher: RecentAppMatcher(catalog: catalog), home: home, now: now, maxAgeDays: maxAge)
                .sorted { $0.lastUsed < $1.lastUsed }
            return .success(entries: entries.count, documents: documents)
        }, then: { [weak self] result in
            guard let self else { return }
            isReading = false
            let dropped = droppedDuringRead
            droppedDuringRead = []
            // Turned off, or forgotten, while reading: what was read is stale.
            guard generation == self.generation else {
                if isOn { fileMayHaveChanged() }
                return
            }
            completedReads += 1
            switch result {
            case .success(let entries, let documents):
                queue(documents, now: now)
                for covered in dropped { dropQueued(where: covered) }
                log.debug("recent files read", metadata: [
                    "entries": "\(entries)", "documents": "\(documents.count)",
                    "queued": "\(queue.count - queueStart)", "µs": "\(currentTimeMicroseconds() - started)",
                ])
            case .failure(let error):
                log.warning("recent files: \(error)")
            }
            if readAgain {
                readAgain = false
                fileMayHaveChanged()
            }
        })
    }

    /// What the worker thread hands back.
    private enum ReadOutcome: Sendable {
        case success(entries: Int, documents: [RecentDocument])
        case failure(String)
    }

    /// Compares what was read with what was seen and queues the changes.
    private func queue(_ documents: [RecentDocument], now: Int64) {
        do {
            if seen == nil {
                let loaded = try context.saved.bridgedStamps(source: RecentFiles.source)
                seen = loaded.stamps
                watermark = loaded.watermark
            }
        } catch {
            log.error("recent files: \(error)")
            lastRead = nil
            return
        }
        let settings = context.saved.privacy.settings
        var present = Set<Int64>()
        present.reserveCapacity(documents.count)
        var newUses: [RecentDocument] = []
        for document in documents {
            let key = ActivityStore.bridgedKey(document.uri)
            present.insert(key)
            guard seen?[key] != document.lastUsed, document.lastUsed > watermark else { continue }
            seen?[key] = document.lastUsed
            newUses.append(document)
            queue.append((key, document.lastUsed, Self.allowsSaving(document, settings: settings, now: now) ? document : nil))
        }
        current.offer(newUses, now: context.scheduler.now, bridgeIsOn: isOn)
        // Entries gone from the file: their stamps are no longer needed.
        for key in Array(seen?.keys ?? [:].keys) where !present.contains(key) {
            removals.append(key)
            seen?[key] = nil
        }
        scheduleBatch()
    }

    private func scheduleBatch() {
        guard batch == nil else { return }
        guard queueStart < queue.count || !removals.isEmpty else {
            queue = []
            queueStart = 0
            onIdle?()
            return
        }
        batch = context.scheduler.whenIdle { [unowned self] in
            batch = nil
            writeBatch()
        }
    }

    /// Whether the privacy settings let `document` be saved: not paused, its
    /// app and the type not blocked, last used within the retention period.
    static func allowsSaving(_ document: RecentDocument, settings: PrivacySettings, now: Int64) -> Bool {
        guard settings.allowsSaving(app: document.appID, type: SystemActivityType.openDocument) else { return false }
        guard settings.retentionDays > 0 else { return true }
        return document.lastUsed >= now &- Int64(settings.retentionDays) &* 86_400_000_000
    }

    private func writeBatch() {
        let end = min(queueStart + Self.batchSize, queue.count)
        let limits = context.registry.limits
        // Asked again for each batch: a pause, block or shorter retention set
        // while a long import is under way holds for the rest of it (its
        // entries are still stamped as seen, like those read while paused).
        let settings = context.saved.privacy.settings
        let now = context.scheduler.now
        let changes = queue[queueStart..<end].map { item in
            ActivityStore.BridgedChange(key: item.key, stamp: item.stamp, save: item.document.flatMap { document in
                guard Self.allowsSaving(document, settings: settings, now: now) else { return nil }
                let properties = RecentFiles.properties(of: document, limits: limits)
                return (SavedActivities.record(type: SystemActivityType.openDocument, app: document.appID, properties: properties),
                        document.useCount, document.lastUsed)
            })
        }
        queueStart = end
        let removing = queueStart >= queue.count ? removals : []
        if !removing.isEmpty { removals = [] }
        let started = currentTimeMicroseconds()
        do {
            try context.saved.importBridged(source: RecentFiles.source, changes: changes, removing: removing)
            log.debug("recent files: batch written", metadata: ["entries": "\(changes.count)", "µs": "\(currentTimeMicroseconds() - started)"])
        } catch {
            log.error("recent files: \(error)")
            // Look at everything again on the next change.
            stop()
            return
        }
        scheduleBatch()
    }
}
