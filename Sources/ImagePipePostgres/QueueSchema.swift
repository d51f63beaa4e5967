// The queue's tables and functions in the schema `imagepipe`, created and upgraded by versioned migrations.
import Foundation
import ImagePipe
import Logging
import PostgresNIO

/// The database side of the queue.
///
/// Every worker (and `imagepipe enqueue`) brings the schema up to date when it starts: the missing
/// migrations run in one transaction under an advisory lock, so workers starting together wait for
/// the first one and then find nothing left to do, and a failed upgrade leaves nothing half done.
enum QueueSchema {
    /// The advisory lock key that serialises migrations (an arbitrary constant: "imagepipe" in ASCII).
    static let migrationLock: Int64 = 0x696D_6167_6570_6970

    /// Each version's statements, in order. Append a new version; never edit a published one.
    static let migrations: [[String]] = [
        // 1: jobs, their indexes, enqueue and the done notification.
        [
            """
            CREATE TABLE imagepipe.jobs (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                queue text NOT NULL DEFAULT 'images',
                source text NOT NULL,
                state text NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'running', 'done', 'discarded')),
                attempt integer NOT NULL DEFAULT 0,
                run_at timestamptz NOT NULL DEFAULT now(),
                lease_owner text,
                lease_expires_at timestamptz,
                created_at timestamptz NOT NULL DEFAULT now(),
                started_at timestamptz,
                finished_at timestamptz,
                result jsonb,
                errors jsonb NOT NULL DEFAULT '[]'
            )
            """,
            // Claims read only this: it stays small however many finished jobs the table keeps.
            "CREATE INDEX jobs_waiting ON imagepipe.jobs (queue, run_at, id) WHERE state = 'waiting'",
            "CREATE INDEX jobs_running ON imagepipe.jobs (queue, lease_expires_at) WHERE state = 'running'",
            "CREATE INDEX jobs_active_source ON imagepipe.jobs (queue, source) WHERE state IN ('waiting', 'running')",
            "CREATE INDEX jobs_finished ON imagepipe.jobs (queue, finished_at) WHERE state IN ('done', 'discarded')",
            """
            CREATE FUNCTION imagepipe.enqueue(source text, queue text DEFAULT 'images', unique_source boolean DEFAULT false,
                                              run_at timestamptz DEFAULT now())
            RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
                new_id bigint;
            BEGIN
                IF unique_source THEN
                    -- Two producers adding the same source at once: the second waits for the first's commit.
                    PERFORM pg_advisory_xact_lock(hashtextextended(enqueue.queue || E'\\n' || enqueue.source, 0));
                    IF EXISTS (SELECT 1 FROM imagepipe.jobs AS j WHERE j.queue = enqueue.queue AND j.source = enqueue.source
                               AND j.state IN ('waiting', 'running')) THEN
                        RETURN NULL;
                    END IF;
                END IF;
                INSERT INTO imagepipe.jobs (queue, source, run_at) VALUES (enqueue.queue, enqueue.source, enqueue.run_at)
                RETURNING id INTO new_id;
                PERFORM pg_notify('imagepipe_jobs', enqueue.queue);
                RETURN new_id;
            END
            $$
            """,
            """
            CREATE FUNCTION imagepipe.notify_finished(job_id bigint) RETURNS bigint LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('imagepipe_done', job_id::text);
                RETURN job_id;
            END
            $$
            """,
        ],
        // 2: priorities, and cancelling jobs (`queue cancel`, `imagepipe.cancel`).
        [
            """
            ALTER TABLE imagepipe.jobs
                ADD COLUMN priority integer NOT NULL DEFAULT 0,
                ADD COLUMN cancel_requested_at timestamptz,
                DROP CONSTRAINT jobs_state_check,
                ADD CONSTRAINT jobs_state_check CHECK (state IN ('waiting', 'running', 'done', 'discarded', 'cancelled'))
            """,
            // Claims take the lowest priority first, then the earliest due: the index reads in that
            // order, so a claim still stops after the jobs it takes.
            "DROP INDEX imagepipe.jobs_waiting",
            "CREATE INDEX jobs_waiting ON imagepipe.jobs (queue, priority, run_at, id) WHERE state = 'waiting'",
            "DROP INDEX imagepipe.jobs_finished",
            "CREATE INDEX jobs_finished ON imagepipe.jobs (queue, finished_at) WHERE state IN ('done', 'discarded', 'cancelled')",
            // A new parameter changes the function's identity: the old one goes, or calls that name
            // only the first arguments would match both.
            "DROP FUNCTION imagepipe.enqueue(text, text, boolean, timestamptz)",
            """
            CREATE FUNCTION imagepipe.enqueue(source text, queue text DEFAULT 'images', unique_source boolean DEFAULT false,
                                              run_at timestamptz DEFAULT now(), priority integer DEFAULT 0)
            RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
                new_id bigint;
            BEGIN
                IF unique_source THEN
                    -- Two producers adding the same source at once: the second waits for the first's commit.
                    PERFORM pg_advisory_xact_lock(hashtextextended(enqueue.queue || E'\\n' || enqueue.source, 0));
                    IF EXISTS (SELECT 1 FROM imagepipe.jobs AS j WHERE j.queue = enqueue.queue AND j.source = enqueue.source
                               AND j.state IN ('waiting', 'running')) THEN
                        RETURN NULL;
                    END IF;
                END IF;
                INSERT INTO imagepipe.jobs (queue, source, run_at, priority)
                VALUES (enqueue.queue, enqueue.source, enqueue.run_at, enqueue.priority)
                RETURNING id INTO new_id;
                PERFORM pg_notify('imagepipe_jobs', enqueue.queue);
                RETURN new_id;
            END
            $$
            """,
            // A waiting job is cancelled at once; a running one is asked to stop, and its worker
            // (woken by the notification, or at its next heartbeat) stops it at its next safe point
            // and records it cancelled. Returns 'cancelled', 'requested', or NULL: nothing to cancel
            // (finished already, or no such job).
            """
            CREATE FUNCTION imagepipe.cancel(job_id bigint) RETURNS text LANGUAGE plpgsql AS $$
            DECLARE
                now_state text;
            BEGIN
                UPDATE imagepipe.jobs SET
                    state = CASE WHEN state = 'waiting' THEN 'cancelled' ELSE state END,
                    finished_at = CASE WHEN state = 'waiting' THEN now() ELSE finished_at END,
                    cancel_requested_at = coalesce(cancel_requested_at, now())
                WHERE id = job_id AND state IN ('waiting', 'running')
                RETURNING state INTO now_state;
                IF now_state = 'running' THEN
                    PERFORM pg_notify('imagepipe_cancel', job_id::text);
                    RETURN 'requested';
                END IF;
                IF now_state = 'cancelled' THEN
                    PERFORM imagepipe.notify_finished(job_id);
                END IF;
                RETURN now_state;
            END
            $$
            """,
        ],
        // 3: options per job (`{"focus": [X, Y]}`, `imagepipe enqueue --focus`).
        [
            "ALTER TABLE imagepipe.jobs ADD COLUMN options jsonb NOT NULL DEFAULT '{}'",
            "DROP FUNCTION imagepipe.enqueue(text, text, boolean, timestamptz, integer)",
            """
            CREATE FUNCTION imagepipe.enqueue(source text, queue text DEFAULT 'images', unique_source boolean DEFAULT false,
                                              run_at timestamptz DEFAULT now(), priority integer DEFAULT 0,
                                              options jsonb DEFAULT '{}')
            RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
                new_id bigint;
            BEGIN
                IF unique_source THEN
                    -- Two producers adding the same source at once: the second waits for the first's commit.
                    PERFORM pg_advisory_xact_lock(hashtextextended(enqueue.queue || E'\\n' || enqueue.source, 0));
                    IF EXISTS (SELECT 1 FROM imagepipe.jobs AS j WHERE j.queue = enqueue.queue AND j.source = enqueue.source
                               AND j.state IN ('waiting', 'running')) THEN
                        RETURN NULL;
                    END IF;
                END IF;
                INSERT INTO imagepipe.jobs (queue, source, run_at, priority, options)
                VALUES (enqueue.queue, enqueue.source, enqueue.run_at, enqueue.priority, coalesce(enqueue.options, '{}'))
                RETURNING id INTO new_id;
                PERFORM pg_notify('imagepipe_jobs', enqueue.queue);
                RETURN new_id;
            END
            $$
            """,
        ],
        // 4: notices of finished jobs kept until delivered (`--notify-url`), written in the
        // statement that records the job, so a worker that dies leaves them to the others.
        [
            """
            CREATE TABLE imagepipe.notices (
                id text PRIMARY KEY,
                job_id bigint NOT NULL REFERENCES imagepipe.jobs (id) ON DELETE CASCADE,
                queue text NOT NULL,
                body text NOT NULL,
                due_at timestamptz NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            // Workers take over what is due; the cascade from pruned jobs finds theirs.
            "CREATE INDEX notices_due ON imagepipe.notices (queue, due_at)",
            "CREATE INDEX notices_job ON imagepipe.notices (job_id)",
        ],
        // 5: a job that failed for good is `failed`, the word of the queue directory's folder, of
        // `queue status`, logs, metrics and notifications; it was `discarded`. A worker not yet
        // upgraded still writes `discarded` during a rolling upgrade: the trigger files its rows
        // under the new word, so no row is refused and none is missed by the new statements.
        [
            "ALTER TABLE imagepipe.jobs DROP CONSTRAINT jobs_state_check",
            "UPDATE imagepipe.jobs SET state = 'failed' WHERE state = 'discarded'",
            """
            ALTER TABLE imagepipe.jobs
                ADD CONSTRAINT jobs_state_check CHECK (state IN ('waiting', 'running', 'done', 'failed', 'cancelled'))
            """,
            "DROP INDEX imagepipe.jobs_finished",
            "CREATE INDEX jobs_finished ON imagepipe.jobs (queue, finished_at) WHERE state IN ('done', 'failed', 'cancelled')",
            """
            CREATE FUNCTION imagepipe.jobs_state_word() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.state := 'failed';
                RETURN NEW;
            END
            $$
            """,
            """
            CREATE TRIGGER jobs_state_word BEFORE INSERT OR UPDATE OF state ON imagepipe.jobs
                FOR EACH ROW WHEN (NEW.state = 'discarded') EXECUTE FUNCTION imagepipe.jobs_state_word()
            """,
        ],
    ]

    /// The version this build brings a database to.
    static var latestVersion: Int { migrations.count }

    /// The schema's version, or nil when the database has no imagepipe schema; only reads.
    static func version(on connection: PostgresConnection, logger: Logger) async throws -> Int? {
        let exists = try await connection.query("SELECT to_regclass('imagepipe.migrations') IS NOT NULL", logger: logger)
        var found = false
        for try await value in exists.decode(Bool.self) { found = value }
        guard found else { return nil }
        var current = 0
        for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM imagepipe.migrations", logger: logger)
            .decode(Int.self)
        {
            current = version
        }
        return current
    }

    /// Brings the schema up to date; returns the version it was at.
    @discardableResult
    static func migrate(_ client: PostgresClient, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS imagepipe", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS imagepipe.migrations (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            var current = 0
            for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM imagepipe.migrations", logger: logger)
                .decode(Int.self)
            {
                current = version
            }
            if current > latestVersion {
                logger.warning(
                    "the queue's schema is newer than this imagepipe knows; running anyway",
                    metadata: [
                        "schema_version": "\(current)", "known_version": "\(latestVersion)",
                    ])
            }
            for (index, statements) in migrations.enumerated() where index + 1 > current {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO imagepipe.migrations (version) VALUES (\(index + 1))", logger: logger)
                logger.notice("upgraded the queue's schema", metadata: ["schema_version": "\(index + 1)"])
            }
            return current
        }
    }
}
