// SPDX-License-Identifier: Apache-2.0
import CGtk

/// The translation of `text` in the app's gettext domain. gettext hands back
/// the very pointer it was given when there is no translation, which is
/// Swift's temporary copy: that case returns `text` itself.
public func localized(_ text: String) -> String {
    text.withCString { original in
        let translated = gettext(original)!
        return UnsafePointer(translated) == original ? text : String(cString: translated)
    }
}

/// The singular or plural translation for `count`.
public func localized(_ singular: String, _ plural: String, _ count: Int) -> String {
    singular.withCString { one in
        plural.withCString { many in
            let translated = ngettext(one, many, UInt(max(0, count)))!
            if UnsafePointer(translated) == one { return singular }
            if UnsafePointer(translated) == many { return plural }
            return String(cString: translated)
        }
    }
}

/// Binds the gettext `domain` to `directory` (its `<lang>/LC_MESSAGES`) and
/// takes the locale from the environment.
public func setUpTranslations(domain: String, directory: String) {
    cgtk_textdomain(domain, directory)
}

/// The translation of `format` with each `%s` replaced, in order, by an
/// argument: translators see whole sentences and may move the names.
public func localizedFormat(_ format: String, _ arguments: String...) -> String {
    var remaining = arguments[...]
    var result = ""
    var text = Substring(localized(format))
    while let range = text.firstRange(of: "%s") {
        result += text[..<range.lowerBound]
        result += remaining.popFirst() ?? ""
        text = text[range.upperBound...]
    }
    return result + text
}
