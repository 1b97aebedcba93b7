// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TypedValues

/// The keys of a Search result, exactly as the contract lists them; `--json`
/// prints these and no others, so scripts can rely on the set.
enum ResultKeys {
    static let search = ["saved-id", "app-id", "activity-type", "title", "content-description", "keywords",
                         "webpage-url", "score", "last-used"]
    static let suggestion = search + ["suggested-invocation-phrase", "use-count"]

    static func json(_ results: [TypedValue], keys: [String]) -> [[String: Any]] {
        results.map { result in
            let entries = dictionary(result)
            var object: [String: Any] = [:]
            for key in keys { if let value = entries[key] { object[key] = value.jsonObject } }
            return object
        }
    }
}

struct Donate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Save a shortcut for search and suggestions without making anything current; prints its saved id.",
        discussion: """
        Eligible for prediction unless --no-prediction; add --search to find it with search. A repeated \
        donation with the same --persistent-id returns the same saved id. While saving is paused, or for a \
        blocked app or type, nothing is saved and an empty line is printed.
        """)

    @OptionGroup var activity: NewActivityArguments
    @OptionGroup var output: OutputOptions

    func run() throws {
        let arguments = try activity.callArguments()
        let client = try ServiceClient()
        let savedID = try client.call("Donate", arguments).first?.stringValue ?? ""
        if output.json { try Output.json(["saved-id": savedID]) } else { Output.line(savedID) }
    }
}

struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search saved activities (title, keywords, description).",
        discussion: "Every word must match, the last one also as a prefix; case and accents do not matter. With --json: an array of objects with the keys saved-id, app-id, activity-type, title, content-description, keywords, webpage-url, score, last-used (Unix µs).")

    @Argument(help: ArgumentHelp("The words to search for.", valueName: "word"))
    var query: [String]

    @Option(help: ArgumentHelp("At most this many results (default 20, at most 200).", valueName: "n"))
    var limit: UInt32?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("Only this app's activities.", valueName: "app-id"))
    var appID: String?

    @Option(name: .customLong("type"), help: ArgumentHelp("Only this activity type (repeatable).", valueName: "activity-type"))
    var types: [String] = []

    @OptionGroup var output: OutputOptions

    func run() throws {
        var options: [(String, TypedValue)] = []
        if let limit { options.append(("limit", .uint32(limit))) }
        if let appID { options.append(("app-id", .string(appID))) }
        if !types.isEmpty { options.append(("activity-types", .stringArray(types))) }
        let client = try ServiceClient()
        let reply = try client.call("Search", [.string(query.joined(separator: " ")), .stringVariantDictionary(options)])
        let results = arrayItems(reply)
        if output.json {
            try Output.json(ResultKeys.json(results, keys: ResultKeys.search))
            return
        }
        guard !results.isEmpty else {
            Output.line("No saved activities match.")
            return
        }
        Output.table(["SAVED ID", "TITLE", "APP", "TYPE", "LAST USED"], results.map { result in
            let entry = dictionary(result)
            return [entry["saved-id"]?.plainText ?? "", entry["title"]?.plainText ?? "", entry["app-id"]?.plainText ?? "",
                    entry["activity-type"]?.plainText ?? "", formatMicroseconds(entry["last-used"]?.int64Value ?? 0)]
        })
    }
}

struct Suggest: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show suggestions: prediction-eligible saved activities ranked by habit.",
        discussion: "Ranked by how often and how recently they were used and by time of day. With --json: an array of objects with the search keys plus suggested-invocation-phrase and use-count.")

    @Option(help: ArgumentHelp("At most this many results (default 10, at most 200).", valueName: "n"))
    var limit: UInt32?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("Only this app's activities.", valueName: "app-id"))
    var appID: String?

    @OptionGroup var output: OutputOptions

    func run() throws {
        var options: [(String, TypedValue)] = []
        if let limit { options.append(("limit", .uint32(limit))) }
        if let appID { options.append(("app-id", .string(appID))) }
        let client = try ServiceClient()
        let reply = try client.call("GetSuggestions", [.stringVariantDictionary(options)])
        let results = arrayItems(reply)
        if output.json {
            try Output.json(ResultKeys.json(results, keys: ResultKeys.suggestion))
            return
        }
        guard !results.isEmpty else {
            Output.line("No suggestions yet.")
            return
        }
        Output.table(["SAVED ID", "TITLE", "APP", "USES", "LAST USED", "PHRASE"], results.map { result in
            let entry = dictionary(result)
            return [entry["saved-id"]?.plainText ?? "", entry["title"]?.plainText ?? "", entry["app-id"]?.plainText ?? "",
                    entry["use-count"]?.uint32Value.map { "\($0)" } ?? "", formatMicroseconds(entry["last-used"]?.int64Value ?? 0),
                    entry["suggested-invocation-phrase"]?.plainText ?? ""]
        })
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete an app's saved activities by persistent identifier.",
        discussion: "Acts for the app given with --app-id (named with RegisterApplication on this connection); other apps' entries are never touched.")

    @Argument(help: ArgumentHelp("persistent-identifier values of the app's saved activities.", valueName: "persistent-id"))
    var persistentIDs: [String]

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The app whose saved activities to delete.", valueName: "app-id"))
    var appID: String

    func run() throws {
        let client = try ServiceClient()
        try client.call("RegisterApplication", [.string(appID)])
        try client.call("DeleteSavedActivities", [.stringArray(persistentIDs)])
    }
}

struct DeleteAll: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete all of an app's saved activities.",
        discussion: "Acts for the app given with --app-id. To delete everything of every app, see forget-all.")

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The app whose saved activities to delete.", valueName: "app-id"))
    var appID: String

    func run() throws {
        let client = try ServiceClient()
        try client.call("RegisterApplication", [.string(appID)])
        try client.call("DeleteAllSavedActivities")
    }
}

// MARK: - Continuation

struct Continue: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue an activity from outside (a link, a script) in an app that declares its type; prints that app's id.",
        discussion: "The properties are given as for become-current; --app-id names the app that published it, when known. Falls back to opening --url in the browser when no app declares the type.")

    @Argument(help: ArgumentHelp("The activity type.", valueName: "activity-type"))
    var activityType: String

    @OptionGroup var activity: ActivityOptions
    @OptionGroup var continuation: ContinueOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let properties = try activity.properties()
        let client = try ServiceClient()
        let app = try client.call("ContinueActivity", [.string(activityType), .stringVariantDictionary(properties), continuation.dictionary],
                                  timeoutMilliseconds: continuation.callTimeoutMilliseconds).first?.stringValue ?? ""
        if output.json { try Output.json(["app-id": app]) } else { Output.line(app) }
    }
}

struct ContinueSaved: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Continue a saved activity (a search result or suggestion); prints the app that took it.")

    @Argument(help: ArgumentHelp("A saved id from search, suggest or donate.", valueName: "saved-id"))
    var savedID: String

    @OptionGroup var continuation: ContinueOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        let app = try client.call("ContinueSavedActivity", [.string(savedID), continuation.dictionary],
                                  timeoutMilliseconds: continuation.callTimeoutMilliseconds).first?.stringValue ?? ""
        if output.json { try Output.json(["app-id": app]) } else { Output.line(app) }
    }
}

struct Browse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search and continue interactively (what the desktop's search opens).",
        discussion: """
        Lists suggestions (or the results for the words given), numbered; type a number to continue that \
        activity, other words to search again, or an empty line to quit. The desktop entry \
        org.example.UserActivity.desktop runs it in a terminal, and GNOME Shell's LaunchSearch passes the \
        typed terms as one useractivity-search:<percent-encoded terms> argument.
        """)

    @Argument(help: ArgumentHelp("Words to search for, or one useractivity-search: URI.", valueName: "word"))
    var query: [String] = []

    static let uriScheme = "useractivity-search:"

    func run() throws {
        var text = query.joined(separator: " ")
        if query.count == 1, query[0].hasPrefix(Self.uriScheme) {
            text = String(query[0].dropFirst(Self.uriScheme.count)).removingPercentEncoding ?? ""
        }
        let client = try ServiceClient()
        while true {
            let results: [TypedValue]
            if text.trimmingCharacters(in: .whitespaces).isEmpty {
                Output.line("Suggestions:")
                results = arrayItems(try client.call("GetSuggestions", [.stringVariantDictionary([])]))
            } else {
                Output.line("Results for \"\(text)\":")
                results = arrayItems(try client.call("Search", [.string(text), .stringVariantDictionary([])]))
            }
            if results.isEmpty { Output.line("  (nothing)") }
            for (index, result) in results.enumerated() {
                let entry = dictionary(result)
                let description = entry["content-description"]?.plainText ?? ""
                Output.line(String(format: "%3d  ", index + 1) + (entry["title"]?.plainText ?? "")
                            + (description.isEmpty ? "" : " — " + description)
                            + "  (\(entry["app-id"]?.plainText ?? ""))")
            }
            FileHandle.standardOutput.write(Data("Number to continue, words to search, Enter to quit: ".utf8))
            guard let answer = readLine()?.trimmingCharacters(in: .whitespaces), !answer.isEmpty else {
                Output.line()
                return
            }
            if let number = Int(answer), number >= 1, number <= results.count,
               let savedID = dictionary(results[number - 1])["saved-id"]?.stringValue {
                do {
                    let app = try client.call("ContinueSavedActivity", [.string(savedID), .stringVariantDictionary([])],
                                              timeoutMilliseconds: 25_000).first?.stringValue ?? ""
                    Output.line("Continued in \(app.isEmpty ? "the browser" : app).")
                    return
                } catch {
                    let failure = error
                    // Stay open: in a terminal launched by the shell, an exit would hide the error.
                    Output.line("useractivityctl: \(failure.text)")
                    if let hint = failure.hint { Output.line("useractivityctl: \(hint)") }
                    continue
                }
            }
            text = answer
        }
    }
}

/// The elements of a reply whose first argument is an array (`aa{sv}` results).
func arrayItems(_ reply: [TypedValue]) -> [TypedValue] {
    if case .array(_, let items)? = reply.first { return items }
    return []
}
