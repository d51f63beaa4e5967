import Foundation
import ImagePipe
@testable import ImagePipePostgres
import ImagePipeTestKit
import ImagePipeTestSupport
import Testing

/// Queue URLs, where passwords come from, and the names queued sources go by.
@Suite struct PostgresLocationTests {
    @Test func theURLGivesEverythingButThePasswordToLogs() async throws {
        let location = try PostgresLocation(
            parsing: "postgres://worker:s3cr%40t@db.example:6543/media?queue=thumbs&sslmode=require",
            environment: [:], home: "/nonexistent")
        #expect(location.user == "worker" && location.host == "db.example" && location.port == 6543)
        #expect(location.database == "media" && location.queue == "thumbs" && location.sslMode == .require)
        #expect(location.password == "s3cr@t")
        #expect(location.description == "postgres://worker@db.example:6543/media?queue=thumbs&sslmode=require")
        let defaults = try PostgresLocation(parsing: "postgresql://worker@db/media", environment: ["PGPASSWORD": "from-env"], home: "/nonexistent")
        #expect(defaults.queue == "images" && defaults.port == 5432 && defaults.sslMode == .prefer && defaults.password == "from-env")
    }

    @Test func badURLsAreConfigurationErrorsThatNeverEchoThePassword() {
        for url in [
            "postgres://u:hunter2@h/db?queue=no spaces", "postgres://u:hunter2@h/db?sslmode=sometimes",
            "postgres://u:hunter2@h/db?password=x",
        ] {
            #expect {
                try PostgresLocation(parsing: url, environment: [:], home: "/nonexistent")
            } throws: { error in
                let error = error as? ImagePipeError
                return error?.code == .configuration && !(error?.reason.contains("hunter2") ?? true)
            }
        }
    }

    @Test func thePasswordFileIsReadLikeLibpqReadsIt() async throws {
        let home = TemporaryDirectory(prefix: "imagepipe-home")
        let file = home.write(".pgpass", "# comment\nother:5432:*:worker:wrong\ndb:5432:media:worker:pass\\:word\n*:*:*:*:fallback\n")
        chmod(file, 0o600)
        let location = try PostgresLocation(parsing: "postgres://worker@db/media", environment: [:], home: home.path)
        #expect(location.password == "pass:word")
        #expect(try PostgresLocation(parsing: "postgres://someone@elsewhere/x", environment: [:], home: home.path).password == "fallback")
        chmod(file, 0o644)
        #expect(
            try PostgresLocation(parsing: "postgres://worker@db/media", environment: [:], home: home.path).password == nil,
            "a password file others can read is ignored")
    }

    @Test func queuedSourcesGoByTheirKeyOrTheirPath() {
        #expect(JobSource.job(for: "s3://uploads/2024/trip/a.jpg", attempt: 1).relativePath == "2024/trip/a.jpg")
        #expect(JobSource.job(for: "supabase://media/b.png", attempt: 2).relativePath == "b.png")
        #expect(JobSource.job(for: "s3://uploads/2024/trip/a.jpg", attempt: 1).path == "s3://uploads/2024/trip/a.jpg")
        #expect(JobSource.job(for: "./trip//c.jpg", attempt: 1).relativePath == "trip/c.jpg")
        #expect(JobSource.job(for: "/srv/uploads/trip/d.jpg", attempt: 1).relativePath == "d.jpg")
        #expect(JobSource.job(for: "/srv/./uploads//d.jpg", attempt: 1).relativePath == "d.jpg")
        #expect(JobSource.job(for: "/srv/uploads/d.jpg/../f.jpg", attempt: 1).relativePath == "f.jpg")
        #expect(JobSource.job(for: "../outside/g.jpg", attempt: 1).relativePath == "g.jpg")
        #expect(JobSource.job(for: "file:///srv/uploads/e.jpg", attempt: 1).path == "/srv/uploads/e.jpg")
    }

    @Test func aQueuedObjectURLIsReadThroughTheWorkersSourceRepositories() async throws {
        let sources = InMemorySources(buckets: ["uploads"])
        _ = sources.put(ScriptedCompressor.image("the original"), bucket: "uploads", key: "2024/trip/a.jpg")
        let storage = InMemoryStorage()
        let handler = FileHandler(compressor: ScriptedCompressor(), storage: storage, sources: [sources])
        let job = JobSource.job(for: "s3://uploads/2024/trip/a.jpg", attempt: 2)
        #expect(job.object?.location.description == "s3://uploads/2024/trip/a.jpg" && job.attempt == 2)
        let result = try await handler.run(job)
        #expect(result.status == .done, "\(result.error ?? "")")
        #expect(result.source == "s3://uploads/2024/trip/a.jpg")
        #expect(storage.objects["2024/trip/a-large.jpg"] != nil, "keys from the object's key without the bucket")
    }
}
