// SPDX-License-Identifier: Apache-2.0
import CGtk
import DBusKit
import GLibSupport
import GtkSupport
import TypedValues

enum ActivityNames {
    static let service = "org.example.UserActivity"
    static let managerPath = "/org/example/UserActivity"
    static let manager = "org.example.UserActivity"
}

/// Saved activities: search as you type, forget an app, forget a time range.
/// Results live in a list model shown by a `GtkListView`, which makes
/// widgets only for the rows on screen. The model's items are positions,
/// not results: a new answer changes what the rows on screen show and the
/// count, so the rows keep their widgets (GTK would build a row's widgets
/// anew for every new item, and that was most of a keystroke's time).
final class HistoryPage {
    struct Result: Equatable {
        let savedID: String
        let appID: String
        let title: String
        let description: String
        let lastUsed: Int64
    }

    /// Widgets of one list row, reused as the view scrolls.
    private final class Cell {
        let icon: GPointer
        let title: GPointer
        let detail: GPointer
        let time: GPointer
        let forgetOne: GPointer
        let forgetApp: GPointer
        /// The position the row shows now, -1 while unbound.
        var position = -1
        /// What the widgets show, so that a result shown again costs nothing
        /// and a new one of the same app keeps the icon.
        var shown: Result?
        init(icon: GPointer, title: GPointer, detail: GPointer, time: GPointer, forgetOne: GPointer, forgetApp: GPointer) {
            self.icon = icon; self.title = title; self.detail = detail; self.time = time
            self.forgetOne = forgetOne; self.forgetApp = forgetApp
        }
    }

    let page: GPointer
    private let link: ServiceLink
    private let window: GPointer
    private let toaster: Toaster
    private let apps: InstalledApps
    private var notice: UnavailableNotice!
    private let searchEntry: GPointer
    private let status: GPointer
    private let model: OpaquePointer
    private var results: [Result] = []
    private var cells: [GPointer: Cell] = [:]
    /// Only the reply to the latest query is shown.
    private var generation = 0
    /// A person reads a screenful of results and types more to narrow
    /// them; one more than this is asked, to know whether there are more.
    static let shownLimit = 50
    private let trace: SearchTrace?
    /// The list view, whose frame clock tells the trace when results were painted.
    private var list: GPointer!
    private var tracingPaints = false
    private var awaitingPaint = false

    init(link: ServiceLink, window: GPointer, toaster: Toaster, apps: InstalledApps) {
        self.link = link
        self.window = window
        self.toaster = toaster
        self.apps = apps
        trace = SearchTrace(scheduler: GLibScheduler(loop: link.loop))
        page = preferencesPage(localized("Hi_story"), iconName: "document-open-recent-symbolic")

        let searchGroup = preferencesGroup(localized("Saved activities"),
                                           description: localized("What apps saved for search and suggestions. Type to search."))
        searchEntry = gtk_search_entry_new()!.raw
        cgtk_set_string(searchEntry, "placeholder-text", localized("Search history"))
        cgtk_accessible_label(searchEntry, localized("Search history"))
        // Every keystroke searches (GTK waits 150 ms by default): the service
        // answers in well under a millisecond, and a reply to an older query is dropped.
        gtk_search_entry_set_search_delay(searchEntry.as(), 0)
        addToGroup(searchGroup, searchEntry)
        status = label("", cssClasses: ["dim-label"], wrap: true)
        gtk_widget_set_margin_top(status.widget, 6)
        addToGroup(searchGroup, status)

        model = gtk_string_list_new(nil)!
        let factory = gtk_signal_list_item_factory_new()!
        // The selection model and the view each take the reference they are given.
        let selection = gtk_no_selection_new(OpaquePointer(g_object_ref(model.raw)))!
        let list = gtk_list_view_new(selection.raw.as(), factory)!
        self.list = list.raw
        gtk_widget_add_css_class(list, "boxed-list")
        cgtk_accessible_label(list, localized("Search results"))
        let scroller = gtk_scrolled_window_new()!
        gtk_scrolled_window_set_child(scroller.raw.as(), list)
        gtk_scrolled_window_set_min_content_height(scroller.raw.as(), 320)
        gtk_scrolled_window_set_policy(scroller.raw.as(), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC)
        gtk_widget_set_margin_top(scroller, 6)
        addToGroup(searchGroup, scroller.raw)

        let forgetGroup = preferencesGroup(localized("Forget"))
        let ranges: [(String, String, Int64?)] = [
            (localized("Forget the last h_our"), localized("Forget the last hour?"), 3_600),
            (localized("Forget the last _day"), localized("Forget the last day?"), 86_400),
            (localized("Forget _everything"), localized("Forget everything?"), nil),
        ]
        for (title, question, seconds) in ranges {
            let row = actionRow(title)
            let action = button(localized("Forget…"), cssClasses: seconds == nil ? ["destructive-action"] : []) {}
            adw_action_row_add_suffix(row.as(), action.widget)
            adw_action_row_set_activatable_widget(row.as(), action.widget)
            addToGroup(forgetGroup, row)
            onSignal(action, "clicked") { [unowned self] in forget(asking: question, seconds: seconds) }
        }

        notice = UnavailableNotice { [unowned self] in search() }
        for group in [notice.group, searchGroup, forgetGroup] { addGroup(page, group) }

        onSignal(factory.raw, "setup") { [unowned self] item in
            guard let item else { return }
            setUp(item)
        }
        onSignal(factory.raw, "bind") { [unowned self] item in
            guard let item else { return }
            bind(item)
        }
        onSignal(factory.raw, "unbind") { [unowned self] item in
            guard let item else { return }
            cells[item]?.position = -1
        }
        onSignal(factory.raw, "teardown") { [unowned self] item in
            guard let item else { return }
            cells[item] = nil
        }
        if trace != nil {
            onSignal(searchEntry, "changed") { [unowned self] in trace?.mark("typed", editableText(searchEntry)) }
        }
        onSignal(searchEntry, "search-changed") { [unowned self] in search() }
        // SavedActivitiesChanged: history changed elsewhere (a donation, a
        // forget from another program); the search shown is asked again.
        // It comes only to a connection that subscribed, asked again each
        // time the service starts.
        link.follow(ActivityNames.service, signals: { [weak self] message in
            if message.interface == ActivityNames.manager, message.member == "SavedActivitiesChanged" { self?.search() }
        }, ownerChanged: { [weak self] running in
            guard running, let self else { return }
            subscribe()
            search()
        })
        subscribe()
        search()
    }

    // MARK: Searching

    private func subscribe() {
        link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "Subscribe", []) { _ in }
    }

    /// Searches for the entry's text at once. Each search is numbered and
    /// only the answer to the newest is shown: a reply to a query already
    /// typed over is dropped, never waited for.
    func search() {
        generation += 1
        let asked = generation
        let query = editableText(searchEntry)
        trace?.mark("sent", query)
        link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "Search",
                  [.string(query), .stringVariantDictionary([("limit", .uint32(UInt32(Self.shownLimit + 1)))])]) { [weak self] result in
            guard let self else { return }
            trace?.mark("reply", query)
            guard asked == generation else { return }
            switch result {
            case .success(let values):
                notice.show(nil)
                show((values.first?.arrayElements ?? []).compactMap(Self.decode), query: query)
            case .failure(let failure):
                notice.show(localized("History is not available.") + " " + failure.explanation)
                show([], query: query)
            }
        }
    }

    private static func decode(_ value: TypedValue) -> Result? {
        guard let entries = dictionaryEntries(value) else { return nil }
        let fields = Dictionary(entries, uniquingKeysWith: { $1 })
        guard let savedID = fields["saved-id"]?.stringValue, let appID = fields["app-id"]?.stringValue else { return nil }
        return Result(savedID: savedID, appID: appID, title: fields["title"]?.stringValue ?? "",
                      description: fields["content-description"]?.stringValue ?? "",
                      lastUsed: fields["last-used"]?.int64Value ?? 0)
    }

    private func show(_ answer: [Result], query: String) {
        let more = answer.count > Self.shownLimit
        let found = more ? Array(answer.prefix(Self.shownLimit)) : answer
        let previous = results
        results = found
        if found.count < previous.count {
            gtk_string_list_splice(model, guint(found.count), guint(previous.count - found.count), nil)
        } else if found.count > previous.count {
            var positions = (previous.count..<found.count).map { strdup(String($0)) }
            positions.append(nil)
            positions.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                    gtk_string_list_splice(model, guint(previous.count), 0, $0)
                }
            }
            positions.forEach { free($0) }
        }
        // The rows on screen that stay show their position's new result.
        for cell in cells.values where cell.position >= 0 && cell.position < found.count {
            fill(cell, with: found[cell.position])
        }
        if let trace { traceModel(trace, query: query) }
        if found.isEmpty {
            setLabel(status, query.isEmpty ? localized("Nothing saved yet.") : localized("No saved activity matches."))
        } else if more {
            setLabel(status, localized("The first %d results; type more to narrow them.").replacingFirst("%d", with: String(found.count)))
        } else {
            setLabel(status, localized("%d result", "%d results", found.count).replacingFirst("%d", with: String(found.count)))
        }
    }

    private func traceModel(_ trace: SearchTrace, query: String) {
        trace.mark("model", query)
        if !tracingPaints {
            tracingPaints = onFramePainted(list) { [unowned self] in
                guard awaitingPaint else { return }
                awaitingPaint = false
                self.trace?.mark("painted")
            }
        }
        awaitingPaint = true
    }

    // MARK: Rows

    private func setUp(_ item: GPointer) {
        let box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12)!
        gtk_widget_set_margin_start(box, 12); gtk_widget_set_margin_end(box, 6)
        gtk_widget_set_margin_top(box, 8); gtk_widget_set_margin_bottom(box, 8)
        let icon = apps.image("", pixelSize: 32)
        let texts = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)!
        gtk_widget_set_hexpand(texts, CGTK_TRUE)
        let title = label("", cssClasses: ["heading"])
        let detail = label("", cssClasses: ["dim-label"])
        gtk_box_append(texts.raw.as(), title.widget)
        gtk_box_append(texts.raw.as(), detail.widget)
        let time = label("", cssClasses: ["dim-label", "caption"], xalign: 1)
        let cell = Cell(icon: icon, title: title, detail: detail, time: time,
                        forgetOne: iconButton("list-remove-symbolic", tooltip: localized("Forget this activity")) {},
                        forgetApp: iconButton("user-trash-symbolic", tooltip: localized("Forget this app")) {})
        onSignal(cell.forgetOne, "clicked") { [unowned self, unowned cell] in
            guard results.indices.contains(cell.position) else { return }
            forgetOne(results[cell.position])
        }
        onSignal(cell.forgetApp, "clicked") { [unowned self, unowned cell] in
            guard results.indices.contains(cell.position) else { return }
            forgetApp(results[cell.position].appID)
        }
        for child in [icon, texts.raw, time, cell.forgetOne, cell.forgetApp] { gtk_box_append(box.raw.as(), child.widget) }
        gtk_list_item_set_child(item.as(), box)
        cells[item] = cell
    }

    private func bind(_ item: GPointer) {
        guard let cell = cells[item], let object = gtk_list_item_get_item(item.as()),
              let text = gtk_string_object_get_string(OpaquePointer(object)),
              let position = Int(String(cString: text)), results.indices.contains(position) else { return }
        cell.position = position
        fill(cell, with: results[position])
    }

    private func fill(_ cell: Cell, with result: Result) {
        guard cell.shown != result else { return }
        if cell.shown?.appID != result.appID { apps.setImage(cell.icon, result.appID) }
        cell.shown = result
        setLabel(cell.title, displayTitle(result))
        let appName = apps.app(result.appID).name
        setLabel(cell.detail, result.description.isEmpty ? appName : "\(result.description) — \(appName)")
        setLabel(cell.time, whenText(microseconds: result.lastUsed))
        cgtk_accessible_label(cell.forgetOne, localized("Forget this activity") + ": " + displayTitle(result))
        cgtk_accessible_label(cell.forgetApp, localized("Forget this app") + ": " + appName)
    }

    private func displayTitle(_ result: Result) -> String {
        result.title.isEmpty ? localized("Untitled") : result.title
    }

    // MARK: Forgetting

    /// One entry, at once (a single result, as a file manager's "Remove from Recent").
    private func forgetOne(_ result: Result) {
        link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "ForgetSavedActivities",
                  [.stringArray([result.savedID])]) { [weak self] reply in self?.forgotten(reply) }
    }

    private func forgetApp(_ appID: String) {
        let name = apps.app(appID).name
        ask(parent: window, heading: localizedFormat("Forget everything from %s?", name),
            body: localized("Every saved activity of this app is deleted. This cannot be undone."),
            responses: [("cancel", localized("_Cancel"), false), ("forget", localized("_Forget"), true)]) { [weak self] answer in
            guard answer == "forget", let self else { return }
            link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "ForgetApplication",
                      [.string(appID)]) { [weak self] result in self?.forgotten(result) }
        }
    }

    private func forget(asking question: String, seconds: Int64?) {
        ask(parent: window, heading: question,
            body: localized("Saved activities used in this time are deleted. This cannot be undone."),
            responses: [("cancel", localized("_Cancel"), false), ("forget", localized("_Forget"), true)]) { [weak self] answer in
            guard answer == "forget", let self else { return }
            let done: (Swift.Result<[TypedValue], DBusFailure>) -> Void = { [weak self] result in self?.forgotten(result) }
            if let seconds {
                let now = currentTimeMicroseconds()
                link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "ForgetRange",
                          [.int64(now - seconds * 1_000_000), .int64(Int64.max)], done)
            } else {
                link.call(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, "ForgetAll", [], done)
            }
        }
    }

    private func forgotten(_ result: Swift.Result<[TypedValue], DBusFailure>) {
        switch result {
        case .success(let values):
            let count = Int(values.first?.uint32Value ?? 0)
            toaster.show(localized("%d saved activity forgotten", "%d saved activities forgotten", count)
                .replacingFirst("%d", with: String(count)))
            search()
        case .failure(let failure):
            toaster.show(localized("Could not forget:") + " " + failure.explanation)
        }
    }
}

extension String {
    /// The string with its first `target` replaced (for the counts in translated messages).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        replacing(target, with: replacement, maxReplacements: 1)
    }
}
