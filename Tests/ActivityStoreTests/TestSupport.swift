// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import Foundation
import TypedValues

/// A fresh directory under the system temporary directory, removed at deinit.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/activitystore-test-XXXXXX").utf8CString)
        guard let result = mkdtemp(&template) else { throw POSIXError(.EIO) }
        path = String(cString: result)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func mode(of relativePath: String) -> Int? {
        var info = stat()
        guard stat(path + "/" + relativePath, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o7777)
    }
}

let hour: Int64 = 3_600_000_000
let day: Int64 = 24 * hour
/// 2024-06-03 00:00:00 UTC, a Monday.
let baseTime: Int64 = 1_717_372_800_000_000

func record(app: String = "com.example.Editor", type: String? = nil, id: String = "", title: String = "",
            description: String = "", keywords: [String] = [], search: Bool = true, prediction: Bool = true,
            expiration: Int64 = 0, phrase: String = "", properties: TypedValue? = nil) -> SavedActivityRecord {
    SavedActivityRecord(
        appID: app, activityType: type ?? app + ".edit", persistentIdentifier: id, title: title,
        contentDescription: description, keywords: keywords, webpageURL: "",
        eligibleForSearch: search, eligibleForPrediction: prediction, expirationDate: expiration,
        suggestedInvocationPhrase: phrase,
        properties: properties ?? .stringVariantDictionary([("title", .string(title))]))
}
