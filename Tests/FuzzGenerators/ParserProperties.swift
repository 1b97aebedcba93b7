// SPDX-License-Identifier: Apache-2.0
import ActivityStore
import Foundation
import TypedValues
import UserActivityCore

/// Structure-aware generators for the daemon's parsers, each with the
/// properties its result must have. Every check returns the violations it
/// found (empty: fine); a crash or a hang is a finding too.
///
/// The libFuzzer harnesses in `Fuzz/` turn a violation into `abort()` so the
/// fuzzer keeps the input; `HardeningTests.ParserPropertyTests` runs the same
/// generators from fixed seeds.
public enum ParserProperties {
    // MARK: - Shared vocabulary

    /// App IDs the generators build from: valid ones (with `-` and `_`, as
    /// systemd escaping must handle), suspicious ones and invalid ones.
    static let appIDs = [
        "com.example.Editor", "com.example.Viewer", "com.example.suite.Writer", "org.foo", "org.gnome.Text-Editor",
        "io.x_y.App", "com.example.Editor.Lite", "a.b", "com.example", "com", "1com.example.X", "com..example",
        "com.exämple.App", "-x.y", "x.-y", String(repeating: "a.", count: 130) + "b",
    ]

    static let tokens = ["app", "gnome", "kde", "flatpak", "snap", "autostart", "1234", "abc-def", "x\\x2dy",
                         "\\x", "\\x2", "\\xzz", "\\x2D", "@", "@1", "-", "--", ".", "..", "scope", "service", "é", ""]

    /// systemd unit-name escaping of an app ID (`-` and anything outside
    /// `[A-Za-z0-9_.:]` become `\xNN`), as launchers write it.
    public static func systemdEscape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80 && (c.isLetter || c.isNumber || c == "_" || c == "." || c == ":") && byte != UInt8(ascii: "\\") {
                out.append(c)
            } else {
                out += "\\x" + String(byte, radix: 16).leftPad(2)
            }
        }
        return out
    }

    // MARK: - /proc/PID/cgroup

    /// A cgroup file: a mix of unified and v1 lines, app units (with known
    /// app IDs, so the result can be predicted), snaps and junk.
    public static func cgroupText(_ input: inout FuzzInput) -> (text: String, plantedApp: String?, isScope: Bool) {
        var lines: [String] = []
        var planted: String?
        var isScope = true
        for _ in 0..<input.int(0...5) {
            var components = ["user.slice", "user-1000.slice", "user@1000.service"]
            var unitApp: String?
            switch input.int(0...6) {
            case 0, 1:
                let app = input.pick(appIDs.filter { ReverseDNSName.isValid($0) })
                let launcher = input.chance(50) ? "" : input.pick(["gnome", "kde", "flatpak"]) + "-"
                isScope = input.bool()
                let unit = isScope
                    ? "app-\(launcher)\(systemdEscape(app))-\(input.int(1...99999)).scope"
                    : "app-\(launcher)\(systemdEscape(app))\(input.chance(50) ? "@\(input.int(1...999))" : "").service"
                components += ["app.slice", unit]
                unitApp = app
                if input.chance(20) { components.append("sub-\(input.int(0...9)).scope") }
            case 2:
                components += ["snap.\(input.pick(["firefox", "code_insiders", "", "a.b"])).\(input.pick(["firefox", "hook.configure"]))-\(input.int(0...999)).scope"]
            case 3:
                components += (0..<input.int(0...4)).map { _ in input.pick(tokens) + input.pick(["", ".scope", ".service", ".slice"]) }
            default:
                components = (0..<input.int(0...6)).map { _ in input.pick(tokens) }
            }
            let path = "/" + components.joined(separator: "/")
            // Whether the line keeps the path readable, so that its unit must be found.
            var keepsPath = true
            switch input.int(0...4) {
            case 0: lines.append("0::" + path)
            case 1: lines.append("\(input.int(1...12)):cpu,cpuacct:" + path)
            case 2:
                let prefix = input.pick(["", "::", ":", "0:", "garbage", "1:name=systemd"])
                keepsPath = prefix == "::"
                lines.append(prefix + path)
            case 3:
                keepsPath = false
                lines.append(String(decoding: input.bytes(count: input.int(0...40)), as: UTF8.self))
            default:
                let suffix = input.pick(["", "\r", " ", "/"])
                keepsPath = suffix != " "
                lines.append("0::" + path + suffix)
            }
            if keepsPath, planted == nil, let unitApp { planted = unitApp }
        }
        return (lines.joined(separator: input.pick(["\n", "\r\n", "\n\n"])), planted, isScope)
    }

    /// The static cgroup parsers on generated text.
    public static func checkCgroup(_ input: inout FuzzInput) -> [String] {
        let (text, planted, _) = cgroupText(&input)
        var violations: [String] = []
        if let snap = ProcessIdentityProbe.snapName(fromCgroup: text) {
            if snap.isEmpty || snap.contains(".") || !text.contains("snap.\(snap).") {
                violations.append("snapName \(snap.debugDescription) is not a snap component of \(text.debugDescription)")
            }
        }
        let units = ProcessIdentityProbe.unitNames(fromCgroup: text)
        if Set(units).count != units.count { violations.append("unitNames has duplicates: \(units)") }
        for unit in units {
            guard unit.hasPrefix("app-"), unit.hasSuffix(".scope") || unit.hasSuffix(".service"), text.contains(unit) else {
                violations.append("unitNames returned \(unit.debugDescription), not an app unit of \(text.debugDescription)")
                continue
            }
            let candidates = ProcessIdentityProbe.appIDCandidates(fromUnitName: unit)
            if candidates.contains(where: \.isEmpty) || Set(candidates).count != candidates.count {
                violations.append("appIDCandidates(\(unit)) = \(candidates)")
            }
        }
        // A unit written the way launchers write it names its app among the candidates.
        if let planted, ProcessIdentityProbe.snapName(fromCgroup: text) == nil {
            let all = units.flatMap { ProcessIdentityProbe.appIDCandidates(fromUnitName: $0) }
            if !all.contains(planted) {
                violations.append("the app \(planted) of a launcher-written unit is not among the candidates \(all) of \(text.debugDescription)")
            }
        }
        // Unescaping undoes systemd's escaping.
        let raw = String(decoding: input.bytes(count: input.int(0...24)), as: UTF8.self)
        if ProcessIdentityProbe.unescape(Substring(systemdEscape(raw))) != raw {
            violations.append("unescape(escape(\(raw.debugDescription))) is not the original")
        }
        if !raw.contains("\\") && ProcessIdentityProbe.unescape(Substring(raw)) != raw {
            violations.append("unescape changed \(raw.debugDescription), which has no escapes")
        }
        return violations
    }

    // MARK: - /proc/PID tree with .flatpak-info

    /// Builds `<procRoot>/<pid>/` in some shape (missing, no root, a Flatpak
    /// with a valid or broken `.flatpak-info`, a host app unit, a snap) and
    /// checks what `ProcessIdentityProbe.identify` concludes.
    public static func checkProcessTree(_ input: inout FuzzInput, procRoot: String, loadKeyFile: @escaping KeyFileLoader) -> [String] {
        let fm = FileManager.default
        try? fm.removeItem(atPath: procRoot)
        try? fm.createDirectory(atPath: procRoot, withIntermediateDirectories: true)
        let pid = UInt32(input.int(1...4_000_000))
        let dir = "\(procRoot)/\(pid)"
        let catalog = AppCatalog(apps: appIDs.filter { ReverseDNSName.isValid($0) && input.chance(70) }.map {
            InstalledApp(id: $0, desktopFilePath: "/fixture/\($0).desktop", team: AppCatalog.implicitTeam(of: $0),
                         snapInstanceName: $0 == "org.foo" ? "firefox" : nil)
        })
        let exists = !input.chance(5)
        var flatpakName: String?
        var hasInfo = false
        var canonicalInfo = false
        // /proc/PID/stat: usually a live process started at boot; sometimes
        // missing, a zombie, or not parseable, each of which must fail closed.
        let statKind = input.int(0...11)
        let liveProcess = exists && statKind > 2
        if exists {
            try? fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let fields = " 1 \(pid) \(pid) 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 \(input.int(0...1000)) 0 0\n"
            switch statKind {
            case 0: break
            case 1: _ = fm.createFile(atPath: dir + "/stat", contents: Data("\(pid) (app) Z\(fields)".utf8))
            case 2: _ = fm.createFile(atPath: dir + "/stat", contents: Data(input.pick(["", "\(pid) (app", "\(pid) (a) S 1 2", "\(pid) (a) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 later 0 0\n"]).utf8))
            default: _ = fm.createFile(atPath: dir + "/stat", contents: Data("\(pid) (\(input.pick(["app", "a) (b", "x y", ""]))) \(input.pick(["S", "R", "D", "t"]))\(fields)".utf8))
            }
            let (cgroup, _, _) = cgroupText(&input)
            if !input.chance(5) { _ = fm.createFile(atPath: dir + "/cgroup", contents: Data(cgroup.utf8)) }
            switch input.int(0...5) {
            case 0: break // no root/: a host process whose root cannot be looked at that way
            case 1: _ = fm.createFile(atPath: dir + "/root", contents: Data()) // root is a file: ENOTDIR
            default:
                try? fm.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
                if input.chance(60) {
                    hasInfo = true
                    let name = input.pick(appIDs + ["", " ", "x"])
                    var text: String
                    switch input.int(0...5) {
                    case 0, 1:
                        text = "[Application]\nname=\(name)\nruntime=runtime/org.gnome.Platform/x86_64/47\n"
                        canonicalInfo = !name.isEmpty && !name.hasPrefix(" ") && name.utf8.count < 200
                        flatpakName = name
                    case 2: text = "[Runtime]\nname=\(name)\n"
                    case 3: text = "[Application]\nname=\(name)\n[Application]\nname=\(input.pick(appIDs))\n"
                    case 4: text = String(decoding: input.bytes(count: input.int(0...200)), as: UTF8.self)
                    default:
                        text = (0..<input.int(0...8)).map { _ in
                            input.pick(["[Application]", "name=" + name, "name", "=x", "# c", "[", "name[de]=x", "\u{0}", "[Instance]", "instance-id=1"])
                        }.joined(separator: "\n")
                    }
                    if input.chance(5) {
                        // A directory where the file should be: still a sandbox, but no app.
                        canonicalInfo = false
                        try? fm.createDirectory(atPath: dir + "/root/.flatpak-info", withIntermediateDirectories: true)
                    } else {
                        _ = fm.createFile(atPath: dir + "/root/.flatpak-info", contents: Data(text.utf8))
                    }
                }
            }
            if input.chance(20) {
                _ = fm.createFile(atPath: dir + "/mountinfo", contents: Data("36 35 98:0 / / rw - \(input.pick(["fuse.fuse-overlayfs", "ext4", "overlay", ""])) x rw\n".utf8))
            }
        }
        let identity = ProcessIdentityProbe(procRoot: procRoot, loadKeyFile: loadKeyFile).identify(pid: pid, catalog: catalog)
        var violations: [String] = []
        let shape = "pid dir \(exists ? "present" : "missing"), .flatpak-info \(hasInfo ? "present" : "absent")"
        if !liveProcess && (identity.confinement != .flatpak || identity.appID != nil) {
            violations.append("a vanished, exited or unreadable process must be confined with no app (stat kind \(statKind)), got \(identity)")
        }
        if hasInfo && identity.confinement != .flatpak {
            violations.append("a process with /.flatpak-info must be a Flatpak (\(shape)), got \(identity)")
        }
        if liveProcess, canonicalInfo, let flatpakName, identity.appID != flatpakName {
            violations.append("[Application] name=\(flatpakName) must be the app, got \(identity)")
        }
        if identity.confinement == .host, let app = identity.appID, catalog.app(app) == nil {
            violations.append("a host process was given the app \(app), which is not installed")
        }
        if identity.confinement == .snap, let app = identity.appID, catalog.app(app)?.snapInstanceName == nil {
            violations.append("a snap was given the app \(app), which is not a snap's")
        }
        return violations
    }

    // MARK: - Desktop entries

    /// A desktop entry's text: keys that matter to the catalog, in valid and
    /// broken forms, plus comments, other groups and junk.
    static func desktopEntryText(_ input: inout FuzzInput, id: String) -> String {
        var lines: [String] = []
        let team = input.pick([AppCatalog.implicitTeam(of: id), ReverseDNSName.parent(of: id) ?? id, id, "com", "org.other",
                               "com.example", "com.example.suite", input.pick(appIDs)])
        func typeValue() -> String {
            let base = input.pick([team, AppCatalog.implicitTeam(of: id), id, "org.other", "com.example.Editor"])
            return input.pick([base + "." + input.pick(["edit-document", "view", "x_y", "1bad", "", "a.b"]), base,
                               input.pick(tokens), String(repeating: "z", count: input.int(1...300)), "com.example.Editor.edit-document"])
        }
        if !input.chance(5) { lines.append(input.pick(["[Desktop Entry]", "[Desktop Entry]", "[Desktop Action x]", "[desktop entry]", "[Desktop Entry"])) }
        for _ in 0..<input.int(0...10) {
            switch input.int(0...12) {
            case 0: lines.append("Type=" + input.pick(["Application", "Application", "Link", "Directory", "", "application"]))
            case 1: lines.append("Hidden=" + input.pick(["true", "false", "True", "1", ""]))
            case 2: lines.append("Name=" + input.pick(["App", "", "Ü", "a=b"]))
            case 3: lines.append("Exec=/bin/true")
            case 4, 5, 6:
                let list = (0..<input.int(0...5)).map { _ in typeValue().replacingOccurrences(of: ";", with: "\\;") }
                lines.append(AppCatalog.typesKey + "=" + list.joined(separator: input.pick([";", ";", "\\;", " ; "])) + input.pick([";", "", ";;"]))
            case 7: lines.append(AppCatalog.teamKey + "=" + team)
            case 8: lines.append("DBusActivatable=" + input.pick(["true", "false", "yes"]))
            case 9: lines.append(AppCatalog.snapInstanceNameKey + "=" + input.pick(["firefox", "", "a b"]))
            case 10: lines.append(input.pick(["# comment", "", "Name[de]=Anwendung", "X-Other=\\s\\n\\t\\\\", "=novalue", "NoEquals", "[Other Group]", "Key With Space=1"]))
            case 11: lines.append(String(decoding: input.bytes(count: input.int(0...60)), as: UTF8.self))
            default: lines.append(AppCatalog.typesKey + "[de]=" + typeValue())
            }
        }
        return lines.joined(separator: "\n") + (input.chance(80) ? "\n" : "")
    }

    /// Writes a few desktop entries into two application directories
    /// (the first wins) and checks the catalog built from them.
    public static func checkDesktopEntries(_ input: inout FuzzInput, scratch: String, loadKeyFile: @escaping KeyFileLoader) -> [String] {
        let fm = FileManager.default
        try? fm.removeItem(atPath: scratch)
        let directories = [scratch + "/home/applications", scratch + "/share/applications"]
        for dir in directories { try? fm.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        // Relative path → desktop-file ID, for the precedence check.
        var written: [(directory: Int, relative: String, id: String)] = []
        for _ in 0..<input.int(0...6) {
            let directory = input.int(0...1)
            let id = input.pick(appIDs)
            var relative = id + ".desktop"
            var fileID = id
            if input.chance(15), let dot = id.firstIndex(of: ".") {
                // vendor/foo.desktop is the ID vendor-foo.
                relative = String(id[..<dot]) + "/" + String(id[id.index(after: dot)...]) + ".desktop"
                fileID = String(id[..<dot]) + "-" + String(id[id.index(after: dot)...])
            }
            if input.chance(5) { relative = "." + relative } // hidden files are skipped
            let path = directories[directory] + "/" + relative
            try? fm.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if input.chance(5) {
                try? fm.createDirectory(atPath: path, withIntermediateDirectories: true) // a directory named *.desktop
            } else {
                _ = fm.createFile(atPath: path, contents: Data(desktopEntryText(&input, id: fileID).utf8))
                if !relative.hasPrefix(".") { written.append((directory, relative, fileID)) }
            }
        }
        let catalog = AppCatalog.load(applicationDirectories: directories, loadKeyFile: loadKeyFile)
        var violations: [String] = []
        for app in catalog.apps {
            if !app.declaredTypes.isEmpty {
                if !ReverseDNSName.isValid(app.id) { violations.append("\(app.id) is not reverse-DNS but declares \(app.declaredTypes)") }
                if !(ReverseDNSName.isValid(app.team) && app.team.contains(".") && ReverseDNSName.isAncestorOrSelf(app.team, of: app.id)) {
                    violations.append("\(app.id) declares types with the team \(app.team), which it may not have")
                }
            }
            if Set(app.declaredTypes).count != app.declaredTypes.count { violations.append("\(app.id) has duplicate types \(app.declaredTypes)") }
            for type in app.declaredTypes {
                if !ReverseDNSName.isValid(type) || !type.hasPrefix(app.team + ".") {
                    violations.append("\(app.id) (team \(app.team)) was allowed to declare \(type)")
                }
                if !catalog.apps(declaring: type).contains(where: { $0.id == app.id }) {
                    violations.append("apps(declaring: \(type)) misses \(app.id)")
                }
            }
            // The highest-precedence directory with this ID decides it.
            let winners = written.filter { $0.id == app.id }
            if let first = winners.map(\.directory).min(), !app.desktopFilePath.hasPrefix(directories[first] + "/") {
                violations.append("\(app.id) came from \(app.desktopFilePath), not from the higher-precedence \(directories[first])")
            }
            if winners.isEmpty { violations.append("\(app.id) is in the catalog but no file has that ID") }
        }
        let again = AppCatalog.load(applicationDirectories: directories, loadKeyFile: loadKeyFile)
        if again.apps != catalog.apps { violations.append("loading the same directories twice gave different catalogs") }
        return violations
    }

    // MARK: - User info and stored values

    /// A properties argument: known keys with right and wrong types,
    /// unknown keys, duplicates, and user-info of any shape.
    public static func propertyEntries(_ input: inout FuzzInput, values: ValueGenerator) -> [(String, TypedValue)] {
        var entries: [(String, TypedValue)] = []
        for _ in 0..<input.int(0...6) {
            let key = input.chance(85) ? input.pick(ActivityField.knownKeys) : input.pick(["", "User-Info", "userinfo", "x", "title "])
            let field = ActivityField(key: key)
            var value: TypedValue
            if let field, input.chance(75) {
                value = wellTyped(field, &input, values: values)
            } else {
                value = values.value(&input)
            }
            entries.append((key, value))
        }
        if input.chance(5), let first = entries.first { entries.append(first) }
        return entries
    }

    public static func wellTyped(_ field: ActivityField, _ input: inout FuzzInput, values: ValueGenerator) -> TypedValue {
        switch field {
        case .userInfo, .contentAttributes:
            let count = input.chance(3) ? input.int(200...2000) : input.int(0...6)
            return .stringVariantDictionary((0..<count).map { i in
                (input.chance(90) ? "k\(i % (input.chance(5) ? 3 : 1_000_000))" : values.string(&input), values.value(&input))
            })
        case .webpageURL, .referrerURL:
            return .string(input.pick(["https://example.com/a", "http://x", "ftp://x", "https:", "https://", "mailto:a@b",
                                       "https://exa mple.com", "javascript:x", "", "HTTPS://EXAMPLE.COM", "https://é.example/ü"]))
        case .keywords, .requiredUserInfoKeys:
            let count = input.chance(5) ? input.int(60...300) : input.int(0...4)
            return .stringArray((0..<count).map { _ in input.chance(50) ? "k\(input.int(0...3))" : values.string(&input) })
        case .expirationDate: return .int64(input.pick([0, -1, 1, Int64.max, Int64.min]))
        case .title, .suggestedInvocationPhrase, .persistentIdentifier:
            return .string(input.chance(5) ? String(repeating: "t", count: input.int(1000...1100)) : values.string(&input))
        default:
            return values.value(of: field.typeSignature, &input)
        }
    }

    /// `ActivityPatch.parse`/`applied`/`mergingUserInfo` on generated
    /// properties, and the store's codec round trip of what they accept.
    public static func checkUserInfo(_ input: inout FuzzInput) -> [String] {
        var config = ValueGenerator.Configuration()
        config.busSafe = false
        config.maximumDepth = input.chance(10) ? 70 : 6
        config.maximumElements = 4
        config.fileDescriptor = input.chance(20) ? 3 : nil
        let values = ValueGenerator(config)
        let entries = propertyEntries(&input, values: values)
        var violations: [String] = []
        let limits = ActivityLimits.standard
        do throws(UserActivityError) {
            let patch = try ActivityPatch.parse(entries, allowsAppIDClaim: input.bool())
            let properties = try patch.applied(to: ActivityProperties(), limits: limits)
            let info = properties.value(of: .userInfo)
            if info.marshalledSize > limits.maximumUserInfoBytes { violations.append("accepted user-info of \(info.marshalledSize) bytes") }
            if info.contains(anyOf: Array("hog".utf8)) { violations.append("accepted user-info with h, o or g: \(info.signature)") }
            // Deeper, and the service's own messages carrying it would exceed D-Bus's 64 levels.
            if info.dbusNestingDepth > limits.maximumNestingDepth { violations.append("accepted user-info nested \(info.dbusNestingDepth) levels deep") }
            if let given = entries.last(where: { $0.0 == "user-info" })?.1, !given.isIdentical(to: info) {
                violations.append("user-info did not come back as given")
            }
            let present = Set(properties.userInfo.map(\.key))
            if !properties.requiredUserInfoKeys.allSatisfy(present.contains) { violations.append("a required key is missing but the patch applied") }
            if properties.title.utf8.count > limits.maximumTitleBytes || properties.keywords.count > limits.maximumKeywords {
                violations.append("a title or keyword limit was not enforced")
            }
            violations += checkRoundTrip(info)
            // Merging more entries (AddUserInfoEntries) keeps every rule.
            let more = (0..<input.int(0...3)).map { _ in ("k\(input.int(0...5))", values.value(&input)) }
            let merged = try ActivityPatch.mergingUserInfo(more, into: properties).applied(to: properties, limits: limits)
            let mergedKeys = merged.userInfo.map(\.key)
            if Set(mergedKeys).count != mergedKeys.count { violations.append("merging produced duplicate keys \(mergedKeys)") }
        } catch {
            let allowed: Set<UserActivityError.Kind> = [.invalidArgument, .userInfoTooLarge, .limitExceeded, .missingRequiredUserInfoKeys,
                                                        .unknownProperty, .propertyReadOnly]
            if !allowed.contains(error.kind) { violations.append("unexpected error kind \(error.kind): \(error.message)") }
            if error.message.isEmpty { violations.append("an error without a message") }
        }
        // Any value at all, deep ones included, through the codec.
        violations += checkRoundTrip(values.value(&input))
        return violations
    }

    /// The codec gives back exactly what it was given, refuses only what is
    /// nested deeper than its limit, and never crashes on damaged bytes.
    public static func checkRoundTrip(_ value: TypedValue) -> [String] {
        do {
            let bytes = try TypedValueCodec.encode(value)
            let decoded = try TypedValueCodec.decode(bytes)
            if !decoded.isIdentical(to: value) { return ["codec round trip changed a \(value.signature)"] }
            return []
        } catch {
            if value.containerDepth <= TypedValueCodec.maximumDepth {
                return ["the codec refused a \(value.signature) nested \(value.containerDepth) deep: \(error)"]
            }
            return []
        }
    }

    /// Damaged or arbitrary bytes: decoding throws `CodecError` or gives a
    /// value that encodes and decodes to itself.
    public static func checkDecode(_ bytes: [UInt8]) -> [String] {
        guard let value = try? TypedValueCodec.decode(bytes) else { return [] }
        do {
            let again = try TypedValueCodec.decode(try TypedValueCodec.encode(value))
            return again.isIdentical(to: value) ? [] : ["a decoded value does not survive re-encoding"]
        } catch {
            return ["a decoded value cannot be encoded again: \(error)"]
        }
    }

    /// A valid encoding with a few bytes flipped, cut or inserted.
    public static func damagedEncoding(_ input: inout FuzzInput) -> [UInt8] {
        var config = ValueGenerator.Configuration()
        config.busSafe = false
        let value = ValueGenerator(config).value(&input)
        var bytes = (try? TypedValueCodec.encode(value)) ?? [1]
        for _ in 0..<input.int(0...4) where !bytes.isEmpty {
            let at = input.int(0...(bytes.count - 1))
            switch input.int(0...3) {
            case 0: bytes[at] = input.byte()
            case 1: bytes.removeSubrange(at...)
            case 2: bytes.insert(input.byte(), at: at)
            default: bytes[at] = input.pick([0x80, 0xFF, 0x7F, UInt8(ascii: "a"), UInt8(ascii: "{"), UInt8(ascii: "v")])
            }
        }
        return bytes
    }
}

extension String {
    fileprivate func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
