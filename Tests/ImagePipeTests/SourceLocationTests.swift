// The one parser of a source as text, and a job's source as one value.
import Foundation
import ImagePipe
import Testing

struct SourceLocationTests {
    @Test func objectURLsFileURLsAndPathsEachBecomeTheirLocation() throws {
        #expect(
            try SourceLocation(parsing: "s3://uploads/2024/trip/a b.jpg")
                == .object(ListedObject(location: ObjectLocation(scheme: "s3", bucket: "uploads", key: "2024/trip/a b.jpg"))))
        #expect(
            try SourceLocation(parsing: "supabase://media/a.jpg")
                == .object(ListedObject(location: ObjectLocation(scheme: "supabase", bucket: "media", key: "a.jpg"))))
        #expect(try SourceLocation(parsing: "file:///srv/photos/a.jpg") == .file(path: "/srv/photos/a.jpg"))
        #expect(try SourceLocation(parsing: "photos/a.jpg") == .file(path: "photos/a.jpg"))
        #expect(try SourceLocation(parsing: "/srv/photos/a:b.jpg") == .file(path: "/srv/photos/a:b.jpg"), "a colon is no scheme")
    }

    @Test func aSchemeNoSourceIsReadFromIsRefusedByName() {
        for text in ["https://example.com/a.jpg", "gs://bucket/a.jpg"] {
            #expect {
                try SourceLocation(parsing: text)
            } throws: { error in
                let error = error as? ImagePipeError
                return error?.code == .configuration && error?.reason.contains(text) == true && error?.reason.contains("not supported") == true
            }
        }
        #expect(throws: ImagePipeError.self) { try SourceLocation(parsing: "s3://") }
    }

    @Test func aJobHoldsOneSourceAndReadsItsPartsFromIt() {
        let object = ListedObject(location: ObjectLocation(scheme: "s3", bucket: "b", key: "k/a.jpg"), bytes: 12)
        let remote = Job(object: object, relativePath: "k/a.jpg")
        #expect(remote.source == .object(object) && remote.object == object && remote.path == "s3://b/k/a.jpg" && remote.rawPath == nil)
        let local = Job(path: "/in/a.jpg", relativePath: "a.jpg", followsLinks: false)
        #expect(local.source == .file(path: "/in/a.jpg", raw: nil, followsLinks: false) && local.object == nil && !local.followsLinks)
        #expect(local != Job(path: "/in/a.jpg", relativePath: "a.jpg"), "whether links are followed is part of the source")
    }
}
