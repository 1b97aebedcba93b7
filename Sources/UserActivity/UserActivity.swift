// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues
internal import UserActivityCore

/// A representation of the state of your app at a moment in time, as
/// `NSUserActivity` is on Apple platforms: make it current so that the
/// desktop can offer it elsewhere (Handoff), find it (search) and suggest it
/// (prediction).
///
/// ```swift
/// let activity = UserActivity(activityType: "com.example.Editor.edit-document")
/// activity.title = "Quarterly report"
/// activity.userInfo = ["path": "/home/me/Report.odt", "page": 3]
/// activity.keywords = ["finance", "q3"]
/// activity.isEligibleForSearch = true
/// activity.persistentIdentifier = "doc-42"
/// activity.becomeCurrent()
///
/// // later, as the user scrolls: sent as one Update when the loop next runs
/// activity.addUserInfoEntries(["page": 4])
/// activity.title = "Quarterly report (page 4)"
///
/// activity.invalidate()
/// ```
///
/// The activity type must be declared by your app's desktop entry
/// (`X-UserActivityTypes=`), as `NSUserActivityTypes` is in an Info.plist.
///
/// ## Threads
/// A `UserActivity` can be used from any thread. Its methods return at once;
/// the requests are sent in the order they were made (across all activities
/// of one client), and each returns an ``ActivityOperation`` to await when
/// the answer matters. Property changes made after the activity was
/// published are batched and sent as one `Update`. Callbacks
/// (``wasContinued``, ``didReceiveContinuationStream``) run on the client's
/// loop thread; ``willSave`` runs in a task.
public final class UserActivity: @unchecked Sendable {
    /// The activity type, e.g. `com.example.Editor.edit-document`.
    public let activityType: String

    let lock = NSLock()
    var fields = ActivityFields()
    /// Fields given a value (sent when the activity is created or donated;
    /// the service's defaults apply to the others).
    var explicitlySet: Set<ActivityField> = []
    /// Fields changed since they were last sent.
    var dirty: Set<ActivityField> = []
    var flushScheduled = false
    /// becomeCurrent() was called at least once: later changes are sent.
    var publishRequested = false
    var path: String?
    var invalidated = false
    /// While `willSave` runs, changes go into the SaveActivity answer.
    var savingDepth = 0
    /// Inside performBatchUpdates: one Update at the end.
    var batchDepth = 0
    private let explicitClient: UserActivityClient?

    private var _willSave: (@Sendable (UserActivity) async -> Void)?
    private var _wasContinued: (@Sendable (String) -> Void)?
    private var _didReceiveContinuationStream: (@Sendable (FileHandle) -> Void)?

    // Set for an activity received through a continuation.
    private var _publisherAppID: String?
    private var _activationToken: String?
    private var _desktopStartupID: String?
    var continuationToken: String?

    /// A new activity of `activityType`.
    ///
    /// - Parameters:
    ///   - activityType: A reverse-DNS type your app's desktop entry declares.
    ///   - client: The connection to the service; default ``UserActivityClient/shared()``.
    public init(activityType: String, client: UserActivityClient? = nil) {
        self.activityType = activityType
        self.explicitClient = client
    }

    /// An activity the service delivered for continuation.
    init(incoming activityType: String, data: TypedValue, platformData: TypedValue, client: UserActivityClient) {
        self.activityType = activityType
        self.explicitClient = client
        for (key, value) in data.stringVariantEntries ?? [] {
            if key == "app-id" {
                _publisherAppID = value.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            } else if let field = ActivityField(key: key), fields.set(field, from: value) {
                explicitlySet.insert(field)
            }
        }
        for (key, value) in platformData.stringVariantEntries ?? [] {
            switch key {
            case "continuation-token": continuationToken = value.stringValue
            case "activation-token": _activationToken = value.stringValue
            case "desktop-startup-id": _desktopStartupID = value.stringValue
            default: break
            }
        }
    }

    deinit {
        // Like an NSUserActivity, a published activity nobody holds any more is invalidated.
        guard let path, !invalidated, let client = explicitClient ?? (try? UserActivityClient.shared()) else { return }
        _ = client.enqueueStep { done in
            client.published[path] = nil
            client.callOnLoop(path: path, interface: UserActivityClient.activityInterface, "Invalidate", []) { _ in done() }
        }
    }

    // MARK: Properties

    func read<T>(_ body: (ActivityFields) -> T) -> T {
        lock.withLock { body(fields) }
    }

    /// Changes fields; once the activity was published, schedules one
    /// batched `Update` for everything changed before it is sent.
    func write(_ changed: ActivityField..., body: (inout ActivityFields) -> Void) {
        let scheduleFlush: Bool = lock.withLock {
            body(&fields)
            explicitlySet.formUnion(changed)
            dirty.formUnion(changed)
            return claimFlushLocked()
        }
        if scheduleFlush { scheduleUpdate() }
    }

    /// Whether the caller should schedule the batched Update (and marks it scheduled).
    func claimFlushLocked() -> Bool {
        guard publishRequested, !invalidated, savingDepth == 0, batchDepth == 0, !flushScheduled, !dirty.isEmpty else { return false }
        flushScheduled = true
        return true
    }

    /// Makes several changes that are sent as one `Update`, whatever the
    /// timing. (Changes made one by one are batched too when they come
    /// within a few milliseconds, or within one callback of the loop thread.)
    ///
    /// ```swift
    /// activity.performBatchUpdates {
    ///     activity.title = "Chapter 2"
    ///     activity.addUserInfoEntries(["chapter": 2])
    ///     activity.keywords.insert("draft")
    /// }
    /// ```
    public func performBatchUpdates(_ changes: () throws -> Void) rethrows {
        lock.withLock { batchDepth += 1 }
        defer {
            let scheduleFlush: Bool = lock.withLock {
                batchDepth -= 1
                return claimFlushLocked()
            }
            if scheduleFlush { scheduleUpdate() }
        }
        try changes()
    }

    /// A short, user-visible title (`title`), shown in search and suggestions.
    public var title: String? {
        get { read { $0.title } }
        set { write(.title) { $0.title = newValue } }
    }

    /// The state needed to restore the activity (`userInfo`). Values keep
    /// their exact D-Bus type through the service and its saved copies.
    public var userInfo: [String: UserInfoValue] {
        get { read { $0.userInfo } }
        set { write(.userInfo) { $0.userInfo = newValue } }
    }

    /// Keys that must be in ``userInfo`` (`requiredUserInfoKeys`); saved
    /// copies keep only these.
    public var requiredUserInfoKeys: Set<String> {
        get { read { $0.requiredUserInfoKeys } }
        set { write(.requiredUserInfoKeys) { $0.requiredUserInfoKeys = newValue } }
    }

    /// Search keywords (`keywords`).
    public var keywords: Set<String> {
        get { read { $0.keywords } }
        set { write(.keywords) { $0.keywords = newValue } }
    }

    /// A subtitle for search results (`contentAttributeSet.contentDescription`).
    public var contentDescription: String? {
        get { read { $0.contentDescription } }
        set { write(.contentDescription) { $0.contentDescription = newValue } }
    }

    /// Further search attributes: `thumbnail-path`, `thumbnail-data`, `added-date`, `kind`, …
    public var contentAttributes: [String: UserInfoValue] {
        get { read { $0.contentAttributes } }
        set { write(.contentAttributes) { $0.contentAttributes = newValue } }
    }

    /// An `http:`/`https:` page showing the same content: opened in the
    /// browser when no app can continue the activity (`webpageURL`).
    public var webpageURL: URL? {
        get { read { $0.webpageURL } }
        set { write(.webpageURL) { $0.webpageURL = newValue } }
    }

    /// Where the user came from (`referrerURL`).
    public var referrerURL: URL? {
        get { read { $0.referrerURL } }
        set { write(.referrerURL) { $0.referrerURL = newValue } }
    }

    /// Which window or scene should show the activity (`targetContentIdentifier`).
    public var targetContentIdentifier: String? {
        get { read { $0.targetContentIdentifier } }
        set { write(.targetContentIdentifier) { $0.targetContentIdentifier = newValue } }
    }

    /// A stable ID of the content (`persistentIdentifier`): saved copies are
    /// kept by it, and ``UserActivityClient/deleteSavedActivities(withPersistentIdentifiers:)`` deletes by it.
    public var persistentIdentifier: String? {
        get { read { $0.persistentIdentifier } }
        set { write(.persistentIdentifier) { $0.persistentIdentifier = newValue } }
    }

    /// When the activity stops being current and its saved copy is removed
    /// (`expirationDate`); nil means never. Microsecond precision.
    public var expirationDate: Date? {
        get { read { $0.expirationDate } }
        set { write(.expirationDate) { $0.expirationDate = newValue } }
    }

    /// Whether it can be continued elsewhere (`isEligibleForHandoff`); default true.
    public var isEligibleForHandoff: Bool {
        get { read { $0.isEligibleForHandoff } }
        set { write(.eligibleForHandoff) { $0.isEligibleForHandoff = newValue } }
    }

    /// Whether it is saved for desktop search when it becomes current (`isEligibleForSearch`); default false.
    public var isEligibleForSearch: Bool {
        get { read { $0.isEligibleForSearch } }
        set { write(.eligibleForSearch) { $0.isEligibleForSearch = newValue } }
    }

    /// Stored and reported; no public index exists (`isEligibleForPublicIndexing`); default false.
    public var isEligibleForPublicIndexing: Bool {
        get { read { $0.isEligibleForPublicIndexing } }
        set { write(.eligibleForPublicIndexing) { $0.isEligibleForPublicIndexing = newValue } }
    }

    /// Whether it is saved for suggestions (`isEligibleForPrediction`); default
    /// false, except that ``donate()`` treats an unset value as true, as the service does.
    public var isEligibleForPrediction: Bool {
        get { read { $0.isEligibleForPrediction } }
        set { write(.eligibleForPrediction) { $0.isEligibleForPrediction = newValue } }
    }

    /// Shown with suggestions (`suggestedInvocationPhrase`).
    public var suggestedInvocationPhrase: String? {
        get { read { $0.suggestedInvocationPhrase } }
        set { write(.suggestedInvocationPhrase) { $0.suggestedInvocationPhrase = newValue } }
    }

    /// Set it when the activity's data are stale: before the service reads
    /// them (to save a copy or to continue the activity) it asks this app
    /// for fresh data, ``willSave`` runs, and the answer carries the
    /// activity's properties as they are afterwards (`needsSave`).
    public var needsSave: Bool {
        get { read { $0.needsSave } }
        set { write(.needsSave) { $0.needsSave = newValue } }
    }

    /// Whether the app continuing this activity may open a stream back to
    /// this one (`supportsContinuationStreams`); see ``didReceiveContinuationStream``.
    public var supportsContinuationStreams: Bool {
        get { read { $0.supportsContinuationStreams } }
        set { write(.supportsContinuationStreams) { $0.supportsContinuationStreams = newValue } }
    }

    /// Merges entries into ``userInfo`` (`addUserInfoEntries(from:)`).
    public func addUserInfoEntries(_ entries: [String: UserInfoValue]) {
        write(.userInfo) { $0.userInfo.merge(entries) { _, new in new } }
    }

    // MARK: Callbacks

    /// Called before the service reads an activity whose ``needsSave`` is
    /// true (`userActivityWillSave(_:)`): update its properties here. The
    /// service waits up to 5 s when saving, or the continuation's timeout.
    ///
    /// ```swift
    /// activity.needsSave = true
    /// activity.willSave = { activity in
    ///     activity.addUserInfoEntries(["page": .int(await editor.currentPage)])
    /// }
    /// ```
    public var willSave: (@Sendable (UserActivity) async -> Void)? {
        get { lock.withLock { _willSave } }
        set { lock.withLock { _willSave = newValue } }
    }

    /// Called with the app ID that continued this activity (`userActivityWasContinued(_:)`).
    public var wasContinued: (@Sendable (_ byAppID: String) -> Void)? {
        get { lock.withLock { _wasContinued } }
        set { lock.withLock { _wasContinued = newValue } }
    }

    /// Called when the app that continued this activity opened a
    /// continuation stream (``supportsContinuationStreams``): a connected
    /// socket, read and written by both sides
    /// (`userActivity(_:didReceive:outputStream:)`).
    public var didReceiveContinuationStream: (@Sendable (FileHandle) -> Void)? {
        get { lock.withLock { _didReceiveContinuationStream } }
        set { lock.withLock { _didReceiveContinuationStream = newValue } }
    }

    // MARK: State

    /// The activity's object path on the bus once published
    /// (`/org/example/UserActivity/activity/<id>`), for `busctl` and `gdbus`.
    public var objectPath: String? { lock.withLock { path } }

    /// Whether ``invalidate()`` was called.
    public var isInvalidated: Bool { lock.withLock { invalidated } }

    /// For an activity received through a continuation: the app that
    /// published it, when the service knows.
    public var publisherAppID: String? { lock.withLock { _publisherAppID } }

    /// For an activity received through a continuation: the XDG activation
    /// token to pass to the window that shows it.
    public var activationToken: String? { lock.withLock { _activationToken } }

    /// For an activity received through a continuation: the startup-notification ID.
    public var desktopStartupID: String? { lock.withLock { _desktopStartupID } }

    /// Whether the activity came with a continuation token, so that
    /// ``getContinuationStream()`` can be called.
    public var hasContinuationStream: Bool { lock.withLock { continuationToken != nil } }

    var resolvedClient: UserActivityClient {
        get throws(UserActivityError) {
            if let explicitClient { return explicitClient }
            return try UserActivityClient.shared()
        }
    }

    /// The properties argument for creating or donating: every field given a value.
    func creationEntries() -> [(String, TypedValue)] {
        lock.withLock { fields.entries(explicitlySet) }
    }
}

extension UserActivity: CustomStringConvertible {
    public var description: String {
        let (title, path) = lock.withLock { (fields.title, self.path) }
        return "UserActivity(\(activityType)\(title.map { ", \"\($0)\"" } ?? "")\(path.map { ", \($0)" } ?? ""))"
    }
}
