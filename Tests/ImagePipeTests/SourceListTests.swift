// The list reader of `batch --from` and `enqueue -`: LF and CRLF, blank lines, a byte order mark, bad lines named by number.
import Foundation
import ImagePipe
import ImagePipeTestSupport
import Testing

@Suite struct SourceListTests {
    let directory = TemporaryDirectory()

    @Test func linesEndInLFOrCRLFAndBlankOnesAreIgnored() throws {
        let path = directory.write("list.txt", "\u{FEFF}a.jpg\r\nb c.jpg\n\r\n\ns3://media/d e\r\n  spaced  \nlast")
        #expect(try SourceList.read(path) == ["a.jpg", "b c.jpg", "s3://media/d e", "  spaced  ", "last"])
        #expect(try SourceList.read(directory.write("empty.txt", "")) == [])
    }

    @Test func aLongListIsReadInBatchesAcrossChunks() throws {
        // Lines of 100 bytes cross the reader's 64 KiB chunks at every offset.
        let names = (0..<5000).map { String(format: "%096d.jpg", $0) }
        let path = directory.write("long.txt", names.joined(separator: "\r\n") + "\r\n")
        let list = try SourceList(path: path)
        var read: [String] = []
        while true {
            let batch = try list.next(upTo: 1000)
            if batch.isEmpty { break }
            #expect(batch.count <= 1000)
            read += batch
        }
        #expect(read == names)
    }

    @Test func aNulByteOrInvalidUTF8StopsTheReadingNamingTheLine() throws {
        let cases: [(Data, String)] = [
            (Data("a.jpg\n\nb\u{0}.jpg\n".utf8), "line 3: holds a NUL byte"),
            (Data("a.jpg\r\n".utf8) + Data([0x62, 0xFF, 0x2E, 0x6A, 0x70, 0x67, 0x0D, 0x0A]), "line 2: is not valid UTF-8"),
        ]
        for (index, (data, message)) in cases.enumerated() {
            let path = directory.write("bad\(index).txt", data)
            do {
                _ = try SourceList.read(path)
                Issue.record("\(message): the list was accepted")
            } catch {
                #expect(error.code == .configuration)
                #expect(error.reason == "the list \(path), \(message)")
            }
        }
        do {
            _ = try SourceList.read(directory.url("missing.txt"))
            Issue.record("a missing list was read")
        } catch {
            #expect(error.reason == "cannot read the list \(directory.url("missing.txt")): No such file or directory")
        }
    }
}
