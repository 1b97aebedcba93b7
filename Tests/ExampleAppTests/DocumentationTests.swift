// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

// The per-language pages in docs/ quote the example apps. A quoted line that
// is no longer in the example (renamed call, changed signature) would send a
// newcomer down a path CI does not run, so every quoted line is looked up.

@Suite("The per-language pages quote the example apps as they are")
struct DocumentationTests {
    /// A page, the files its code blocks quote, and the lines it must show.
    struct Page: CustomStringConvertible {
        var name: String
        var app: ExampleApp
        var sources: [String]
        var description: String { name }
    }

    static let pages = [
        Page(name: "app-c.md", app: .c, sources: ["notes.c", "Makefile", "com.example.NotesC.desktop"]),
        Page(name: "app-python.md", app: .python, sources: ["notes_app.py", "com.example.NotesPython.desktop"]),
        Page(name: "app-gjs.md", app: .gjs, sources: ["notes.js", "com.example.NotesGjs.desktop"]),
        Page(name: "app-qt.md", app: .qt, sources: ["notes.cpp", "Makefile", "com.example.NotesQt.desktop"]),
    ]

    /// Languages of the code blocks that quote a source; shell blocks are commands to type.
    static let quotingLanguages: Set<String> = ["c", "cpp", "python", "js", "make", "ini"]

    /// The lines of each fenced code block in a quoting language.
    static func quotedLines(_ markdown: String) -> [String] {
        var lines: [String] = []
        var inQuote: Bool?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inQuote = inQuote == nil ? quotingLanguages.contains(String(line.dropFirst(3))) : nil
                continue
            }
            if inQuote == true { lines.append(String(line)) }
        }
        return lines
    }

    @Test("Every line a page quotes is in its example; app-developers.md and index.md link each page",
          arguments: pages)
    func pageQuotesItsExample(_ page: Page) throws {
        let docs = repositoryRoot() + "/docs/"
        let markdown = try String(contentsOfFile: docs + page.name, encoding: .utf8)
        let sourceLines = Set(try page.sources.flatMap { file in
            try String(contentsOfFile: "\(page.app.sourceDirectory)/\(file)", encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        })
        let quoted = Self.quotedLines(markdown).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.contains("…") && !$0.hasPrefix("[") }
        #expect(quoted.count >= 10, "the page shows the code: \(quoted.count) lines")
        let missing = quoted.filter { !sourceLines.contains($0) }
        #expect(missing.isEmpty, "\(page.name) quotes lines examples/\(page.app.folder) does not have: \(missing)")
        // The commands it gives to try the example name its real files.
        #expect(markdown.contains("examples/\(page.app.folder)/\(page.app.appID).desktop"))
        #expect(markdown.contains("useractivityctl continue \(page.app.noteType)"))
        for index in ["app-developers.md", "index.md"] {
            let text = try String(contentsOfFile: docs + index, encoding: .utf8)
            #expect(text.contains("(\(page.name))"), "\(index) links \(page.name)")
        }
    }

    @Test("The quoted-line check catches a line the example does not have")
    func quotedLineCheckCanFail() {
        let markdown = "text\n```c\nreal ();\n```\n```sh\nmake\n```\n```c\nnot_in_the_example ();\n/* … */\n```\n"
        #expect(Self.quotedLines(markdown) == ["real ();", "not_in_the_example ();", "/* … */"])
    }
}
