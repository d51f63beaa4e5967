import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeTestSupport
import Testing

/// The Supabase trigger of `docs/queues.md`, run as written against a table shaped like Supabase Storage's
/// `storage.objects`: uploads become jobs, other files and buckets do not.
@Suite(.requires(PostgresServer.tool))
struct SupabaseTriggerTests {
    /// The SQL block `docs/queues.md` marks as tested.
    static func documentedTrigger() throws -> String {
        let page = try String(contentsOfFile: Fixtures.repository + "/docs/queues.md", encoding: .utf8)
        let marker = try #require(page.range(of: "<!-- tested: Tests/ImagePipePostgresTests/SupabaseTriggerTests.swift runs this block -->"))
        let after = page[marker.upperBound...]
        let start = try #require(after.range(of: "```sql\n"))
        let end = try #require(after[start.upperBound...].range(of: "```"))
        return String(after[start.upperBound..<end.lowerBound])
    }

    @Test func newUploadsInTheBucketBecomeJobsOnce() async throws {
        let fixture = try PostgresFixture()
        try await QueueDatabase.run(fixture.location, logger: .quiet) { _ throws(ImagePipeError) in }
        _ = try fixture.sql(
            """
            CREATE SCHEMA storage;
            CREATE TABLE storage.objects (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), bucket_id text, name text,
                                          created_at timestamptz DEFAULT now());
            """)
        _ = try fixture.sql(try Self.documentedTrigger())
        _ = try fixture.sql(
            """
            INSERT INTO storage.objects (bucket_id, name) VALUES
                ('uploads', 'u/42/Beach.JPG'), ('uploads', 'u/42/notes.txt'), ('variants', 'u/42/beach-large.jpg'),
                ('uploads', 'u/7/scan.tiff'), ('uploads', 'u/42/Beach.JPG');
            """)
        let jobs = try fixture.sql("SELECT source, state, queue FROM imagepipe.jobs ORDER BY id").split(separator: "\n")
        #expect(jobs == ["supabase://uploads/u/42/Beach.JPG|waiting|images", "supabase://uploads/u/7/scan.tiff|waiting|images"])
    }
}
