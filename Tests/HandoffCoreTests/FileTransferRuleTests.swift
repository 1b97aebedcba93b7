// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
import TypedValues

@Suite struct FileTransferRuleTests {
    let roots = ["/home/ann", "/media", "/run/media"]

    @Test func onlyNonHiddenPathsUnderTheHomeOrARemovableDiskAreShared() {
        #expect(FileSharingPolicy.refusal(resolvedPath: "/home/ann/Documents/Report.odt", roots: roots) == nil)
        #expect(FileSharingPolicy.refusal(resolvedPath: "/media/ann/USB/photo.jpg", roots: roots) == nil)
        #expect(FileSharingPolicy.refusal(resolvedPath: "/etc/passwd", roots: roots) != nil)
        #expect(FileSharingPolicy.refusal(resolvedPath: "/home/annex/file", roots: roots) != nil, "a sibling with the home's name as prefix")
        #expect(FileSharingPolicy.refusal(resolvedPath: "/home/ann/.ssh/id_ed25519", roots: roots) != nil)
        #expect(FileSharingPolicy.refusal(resolvedPath: "/home/ann/Documents/.draft.odt", roots: roots) != nil)
        #expect(FileSharingPolicy.refusal(resolvedPath: "/home/ann", roots: roots) != nil, "the root itself is no file")
        #expect(FileSharingPolicy.refusal(resolvedPath: "relative/file", roots: roots) != nil)
    }

    @Test func fileURIsDecodeToLocalPathsOnly() {
        #expect(FileSharingPolicy.localPath(ofFileURI: "file:///home/ann/My%20Report.odt") == "/home/ann/My Report.odt")
        #expect(FileSharingPolicy.localPath(ofFileURI: "file://localhost/tmp/a") == "/tmp/a")
        #expect(FileSharingPolicy.localPath(ofFileURI: "file://server/share/a") == nil)
        #expect(FileSharingPolicy.localPath(ofFileURI: "https://example.com/a") == nil)
        #expect(FileSharingPolicy.localPath(ofFileURI: "file:///home/ann/%00x") == nil)
        #expect(FileSharingPolicy.localPath(ofFileURI: "file:///home/ann/../../etc/passwd") == nil)
        #expect(FileSharingPolicy.localPath(ofFileURI: "file:///home/ann/%2") == nil)
        let path = "/home/ann/Ré port #1.odt"
        #expect(FileSharingPolicy.localPath(ofFileURI: FileSharingPolicy.fileURI(forPath: path)) == path)
    }

    @Test func downloadsFollowUserDirsAndNamesNeverCollide() {
        #expect(DownloadPlacement.downloadDirectory(userDirs: "# comment\nXDG_DOWNLOAD_DIR=\"$HOME/Téléchargements\"\n", home: "/home/ann") == "/home/ann/Téléchargements")
        #expect(DownloadPlacement.downloadDirectory(userDirs: "XDG_DOWNLOAD_DIR=\"/srv/in\"", home: "/home/ann") == "/srv/in")
        #expect(DownloadPlacement.downloadDirectory(userDirs: "XDG_DOWNLOAD_DIR=\"$HOME/\"", home: "/home/ann") == nil)
        #expect(DownloadPlacement.downloadDirectory(userDirs: "XDG_MUSIC_DIR=\"$HOME/Music\"", home: "/home/ann") == nil)
        #expect(DownloadPlacement.candidate("Report.odt", attempt: 1) == "Report.odt")
        #expect(DownloadPlacement.candidate("Report.odt", attempt: 2) == "Report (2).odt")
        #expect(DownloadPlacement.candidate("README", attempt: 3) == "README (3)")
        #expect(DownloadPlacement.component("../..", fallback: "x") == "_..")
        #expect(DownloadPlacement.component("...", fallback: "x") == "x")
        #expect(DownloadPlacement.component("Ann's/laptop\n", fallback: "x") == "Ann's_laptop_")
    }

    @Test func fileFramesRoundTripAndOutOfBoundsOnesAreRefused() throws {
        let hash = String(repeating: "ab", count: 32)
        let messages: [FileTransferMessage] = [
            .request(request: 1, activityID: "7", uri: "file:///home/ann/a"),
            .header(request: 1, size: 5, sha256: hash, name: "a"),
            .header(request: 1, size: 5, sha256: nil, name: "a"),
            .hashRequest(request: 1),
            .finished(request: 1, sha256: hash),
            .data(request: 1, [1, 2, 3]),
            .credit(request: 1, bytes: 4096),
            .end(request: 1, failure: nil),
            .end(request: 1, failure: StreamFailure(name: "org.example.UserActivity.Error.FileTooLarge", message: "big")),
        ]
        for message in messages {
            let bytes = FrameCodec.encode(message.frame)
            let decoded = try FrameCodec.decode(bytes[4...])
            #expect(FileTransferMessage.parse(decoded)?.frame == message.frame)
        }
        #expect(FileTransferMessage.parse(Frame(.fileData, ["request": .uint32(1)], data: [UInt8](repeating: 0, count: FileTransferLimits.chunk + 1))) == nil)
        #expect(FileTransferMessage.parse(Frame(.fileCredit, ["request": .uint32(1), "bytes": .uint32(UInt32(FileTransferLimits.window) + 1)])) == nil)
        #expect(FileTransferMessage.parse(Frame(.fileHeader, ["request": .uint32(1), "size": .uint64(1), "sha256": .string("xyz"), "name": .string("a")])) == nil)
        #expect(FileTransferMessage.parse(Frame(.fileRequest, ["request": .uint32(1), "id": .string(""), "uri": .string("file:///a")])) == nil)
        #expect(FileTransferMessage.parse(Frame(.fileEnd, ["request": .uint32(1), "sha256": .string("xyz")])) == nil)
        #expect(FileTransferMessage.parse(Frame(.fileHashRequest, [:])) == nil)
        #expect(!FrameKind.fileRequest.isPairing && !FrameKind.fileData.isPairing)
    }

    @Test func theStreamingHashIsSHA256() {
        let hash = SHA256Stream()
        hash.update(Array("hello ".utf8))
        hash.update(Array("world".utf8))
        #expect(hash.finish() == Hex.encode(SHA256.hash(Array("hello world".utf8))))
    }
}
