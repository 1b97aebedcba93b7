// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TypedValues

/// `--json` on every read command.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON instead of a table (stable keys, for scripts).")
    var json = false
}

/// A new activity: its type, then its properties (`become-current`, `donate`).
struct NewActivityArguments: ParsableArguments {
    @Argument(help: ArgumentHelp("The activity type, declared by the app in X-UserActivityTypes.", valueName: "activity-type"))
    var activityType: String

    @OptionGroup var properties: ActivityOptions

    /// BecomeCurrent's and Donate's `(s a{sv})`; a bad property value fails
    /// here, before the daemon is called.
    func callArguments() throws(CLIError) -> [TypedValue] {
        [.string(activityType), .stringVariantDictionary(try properties.properties())]
    }
}

/// The activity properties a command can set, as the daemon's kebab-case
/// `a{sv}` keys (`become-current`, `donate`, `continue`).
struct ActivityOptions: ParsableArguments {
    @Option(name: .customLong("app-id"), help: ArgumentHelp(
        "The app the activity belongs to (its desktop-file ID without .desktop).",
        discussion: "The app must be installed and declare the activity type in X-UserActivityTypes. For continue, it names the app that published the activity, when known.",
        valueName: "app-id"))
    var appID: String?

    @Option(help: ArgumentHelp("The title shown in search and suggestions.", valueName: "text"))
    var title: String?

    @Option(name: .customLong("description"), help: ArgumentHelp("The subtitle shown in search results (content-description).", valueName: "text"))
    var contentDescription: String?

    @Option(name: .customLong("user-info"), help: ArgumentHelp(
        "A user-info entry: key=VALUE in GVariant text, or key:TYPE=text (repeatable).",
        discussion: "VALUE is GVariant text as gdbus reads it: page=3 (int32), page='uint32 3', name=\"'Report'\", tags=\"['a', 'b']\". With a type, basic values are taken verbatim: name:s=Report, page:u=3; containers are GVariant text of that type: ids:au='[1, 2]'.",
        valueName: "entry"))
    var userInfo: [String] = []

    @Option(name: .customLong("keyword"), help: ArgumentHelp("A search keyword (repeatable).", valueName: "word"))
    var keywords: [String] = []

    @Option(name: .customLong("url"), help: ArgumentHelp("The webpage-url (http: or https:), the browser fallback.", valueName: "url"))
    var webpageURL: String?

    @Option(name: .customLong("persistent-id"), help: ArgumentHelp("A stable identifier of the content; the key of saved copies and of delete.", valueName: "id"))
    var persistentID: String?

    @Option(name: .customLong("required-key"), help: ArgumentHelp("A user-info key that must be present; only these are saved (repeatable).", valueName: "key"))
    var requiredKeys: [String] = []

    @Option(name: .customLong("phrase"), help: ArgumentHelp("The suggested invocation phrase shown with suggestions.", valueName: "text"))
    var phrase: String?

    @Option(name: .customLong("expires"), help: ArgumentHelp("The expiration date: ISO 8601 (2026-12-01, 2026-12-01T18:00, …Z) or Unix microseconds.", valueName: "time"))
    var expires: String?

    @Flag(inversion: .prefixedNo, help: "Eligible for search: a saved copy is kept for search and desktop search. Default: no.")
    var search: Bool?

    @Flag(inversion: .prefixedNo, help: "Eligible for prediction (suggestions). Default: no, but yes for donate.")
    var prediction: Bool?

    @Flag(inversion: .prefixedNo, help: "Eligible for handoff (continue). Default: yes.")
    var handoff: Bool?

    /// The properties argument, in a fixed order; only what was given.
    func properties() throws(CLIError) -> [(String, TypedValue)] {
        var pairs: [(String, TypedValue)] = []
        if let appID { pairs.append(("app-id", .string(appID))) }
        if let title { pairs.append(("title", .string(title))) }
        if let contentDescription { pairs.append(("content-description", .string(contentDescription))) }
        if !userInfo.isEmpty {
            var entries: [(String, TypedValue)] = []
            for argument in userInfo {
                do {
                    entries.append(try parseUserInfoEntry(argument))
                } catch {
                    throw CLIError("--user-info: \(error.description)", exitCode: ExitCode.validationFailure.rawValue)
                }
            }
            pairs.append(("user-info", .stringVariantDictionary(entries)))
        }
        if !keywords.isEmpty { pairs.append(("keywords", .stringArray(keywords))) }
        if let webpageURL { pairs.append(("webpage-url", .string(webpageURL))) }
        if let persistentID { pairs.append(("persistent-identifier", .string(persistentID))) }
        if !requiredKeys.isEmpty { pairs.append(("required-user-info-keys", .stringArray(requiredKeys))) }
        if let phrase { pairs.append(("suggested-invocation-phrase", .string(phrase))) }
        if let expires { pairs.append(("expiration-date", .int64(try parseTime(expires, option: "--expires")))) }
        if let search { pairs.append(("eligible-for-search", .boolean(search))) }
        if let prediction { pairs.append(("eligible-for-prediction", .boolean(prediction))) }
        if let handoff { pairs.append(("eligible-for-handoff", .boolean(handoff))) }
        return pairs
    }
}

/// The options of every Continue method.
struct ContinueOptions: ParsableArguments {
    @Option(name: .customLong("target-app-id"), help: ArgumentHelp("Choose this app among the candidates.", valueName: "app-id"))
    var targetAppID: String?

    @Option(name: .customLong("timeout-ms"), help: ArgumentHelp("How long the daemon waits for the app (default 10000).", valueName: "ms"))
    var timeoutMilliseconds: UInt32?

    @Option(name: .customLong("activation-token"), help: ArgumentHelp("An XDG activation token passed on to the app.", valueName: "token"))
    var activationToken: String?

    var dictionary: TypedValue {
        var pairs: [(String, TypedValue)] = []
        if let targetAppID { pairs.append(("target-app-id", .string(targetAppID))) }
        if let timeoutMilliseconds { pairs.append(("timeout-ms", .uint32(timeoutMilliseconds))) }
        if let activationToken { pairs.append(("activation-token", .string(activationToken))) }
        return .stringVariantDictionary(pairs)
    }

    /// The D-Bus call must outlive the daemon's own timeout, so that its
    /// error (RemoteApplicationTimedOut) is what the user sees.
    var callTimeoutMilliseconds: Int32 {
        Int32(clamping: Int64(timeoutMilliseconds ?? 10_000) + 15_000)
    }
}

/// A time on the command line: Unix microseconds, `now`, or ISO 8601
/// (`2026-11-01`, `2026-11-01T09:30`, `2026-11-01 09:30:15`, with `Z` or an
/// offset for another zone; without one, local time).
func parseTime(_ text: String, option: String) throws(CLIError) -> Int64 {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    if let micros = Int64(trimmed) { return micros }
    if trimmed == "now" { return Int64(Date().timeIntervalSince1970 * 1_000_000) }
    let zoned = ISO8601DateFormatter()
    for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
        zoned.formatOptions = options
        if let date = zoned.date(from: trimmed.replacingOccurrences(of: " ", with: "T")) {
            return Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        }
    }
    let local = DateFormatter()
    local.locale = Locale(identifier: "en_US_POSIX")
    local.timeZone = .current
    for format in ["yyyy-MM-dd'T'HH:mm:ss.SSS", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
        local.dateFormat = format
        if let date = local.date(from: trimmed.replacingOccurrences(of: " ", with: "T")) {
            return Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        }
    }
    throw CLIError("\(option): '\(text)' is not a time: use ISO 8601 (2026-11-01, 2026-11-01T09:30, 2026-11-01T09:30:00Z) or Unix microseconds",
                   exitCode: ExitCode.validationFailure.rawValue)
}
