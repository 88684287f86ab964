public import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL server for the tests: Debian's `postgresql` package (`bash .ci/setup --tests` installs it),
/// a cluster made by `initdb` in a fresh temporary directory, listening on a free port of 127.0.0.1 (its Unix
/// socket inside that directory), user `kkpush` with trust authentication, fsync off (a test cluster).
///
/// PostgreSQL refuses to run as root: as root, the directory is given to the `postgres` user and every server
/// binary runs through `runuser -u postgres --`.
///
/// For the libpq tests it also listens on a Unix socket in its directory (``socketDirectory``), requires a
/// password of the user ``passwordUser`` (scram-sha-256; every other user is trusted), and speaks TLS (`ssl=on`)
/// with a certificate for `localhost` and 127.0.0.1 issued at start from the test CA (`Certificates/ca.crt`) with
/// the openssl command (``tlsUnavailable`` says why not, if it could not be made). One server is shared by the whole test process (``shared()``,
/// started on first use): each test makes its own database (``createDatabase(_:)``). It is stopped and its
/// directory removed when the process exits (atexit); a watchdog process does the same if the test process dies
/// without exiting (a crash, a kill), so nothing is left behind.
public final class PostgresServer: @unchecked Sendable {
    /// The temporary directory (data, socket, log).
    public let directory: URL
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The folder of initdb, pg_ctl, psql.
    public let binDirectory: URL
    /// The superuser the cluster was made with.
    public let user = "kkpush"
    /// The user whose login needs a password (``createPasswordUser(password:)`` creates it).
    public let passwordUser = "kkpush_pw"
    /// Why the server has no TLS (nil: it has).
    public private(set) var tlsUnavailable: String?
    /// The folder of the server's Unix socket (`.s.PGSQL.<port>`).
    public var socketDirectory: String { directory.path }
    private let lock = NSLock()
    private var running = false

    var dataDirectory: URL { directory.appendingPathComponent("data") }
    var logFile: URL { directory.appendingPathComponent("server.log") }

    /// Why the tests cannot start a server, as the failure they report.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    private init(directory: URL, port: Int, binDirectory: URL) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
    }

    // MARK: The shared server

    nonisolated(unsafe) private static var sharedServer: PostgresServer?
    nonisolated(unsafe) private static var sharedError: (any Error)?
    private static let sharedLock = NSLock()

    /// The server of this test process, started on first use (a few seconds), stopped at exit.
    public static func shared() throws -> PostgresServer {
        try sharedLock.withLock {
            if let sharedServer { return sharedServer }
            if let sharedError { throw sharedError }
            do {
                let server = try start()
                sharedServer = server
                atexit { PostgresServer.stopShared() }
                return server
            } catch {
                sharedError = error
                throw error
            }
        }
    }

    private static func stopShared() {
        sharedLock.withLock {
            sharedServer?.destroy()
            sharedServer = nil
        }
    }

    // MARK: Starting and stopping

    /// The newest installed PostgreSQL's bin folder (`/usr/lib/postgresql/<version>/bin`).
    public static func findBinaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap { Int($0) }.sorted()
        for version in versions.reversed() {
            let bin = root.appendingPathComponent("\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("initdb").path) { return bin }
        }
        throw Unavailable(
            description:
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): the PostgreSQL store tests need a real server. Run: bash .ci/setup --tests"
        )
    }

    /// Makes a cluster in a new temporary directory and starts it.
    ///
    /// The port is found free and then given to the server, so another process of the suite (an outgoing
    /// connection takes an ephemeral port too) can take it in between: the server then logs "could not bind" and
    /// stops. That start is made again on another port, up to three times (a series of parallel runs once lost
    /// every PostgreSQL test of a run to it).
    public static func start() throws -> PostgresServer {
        var attempt = 1
        while true {
            do {
                return try startOnce()
            } catch let error as Unavailable where attempt < 3 && error.description.contains("could not bind") {
                attempt += 1
            }
        }
    }

    private static func startOnce() throws -> PostgresServer {
        let bin = try findBinaries()
        let directory = try makeTemporaryDirectory(prefix: "kkpush-pg")
        let server = PostgresServer(directory: directory, port: try freeLoopbackPort(), binDirectory: bin)
        do {
            if getuid() == 0 {
                // The postgres user must own the cluster's folder; the temporary folder's parent is /tmp.
                try FileManager.default.setAttributes(
                    [.ownerAccountName: "postgres", .groupOwnerAccountName: "postgres", .posixPermissions: 0o700],
                    ofItemAtPath: directory.path)
            }
            server.startWatchdog()
            try server.run(
                bin.appendingPathComponent("initdb").path,
                [
                    "-D", server.dataDirectory.path, "-A", "trust", "-U", server.user, "-E", "UTF8", "--no-locale",
                    "--no-sync",
                ], timeout: 60)
            try server.requirePassword()
            server.makeCertificate()
            try server.startServer()
            return server
        } catch {
            server.destroy()
            throw error
        }
    }

    /// Starts the cluster (again, after ``stop()``) on the same port and data.
    public func startServer() throws {
        try run(
            binDirectory.appendingPathComponent("pg_ctl").path,
            [
                "-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "30",
                "-o",
                "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
                    + (tlsUnavailable == nil
                        ? " -c ssl=on -c ssl_cert_file=\(directory.path)/tls.crt -c ssl_key_file=\(directory.path)/tls.key"
                        : ""),
                "start",
            ], timeout: 40)
        lock.withLock { running = true }
    }

    /// Puts password lines for ``passwordUser`` before initdb's trust lines of `pg_hba.conf`.
    private func requirePassword() throws {
        let hba = dataDirectory.appendingPathComponent("pg_hba.conf")
        let text = try String(contentsOf: hba, encoding: .utf8)
        let lines = """
            local all \(passwordUser) scram-sha-256
            host all \(passwordUser) 127.0.0.1/32 scram-sha-256

            """
        try Data((lines + text).utf8).write(to: hba)
    }

    /// Issues the server's TLS certificate (CN and subjectAltName localhost, 127.0.0.1) from the test CA; on
    /// failure the server runs without TLS and ``tlsUnavailable`` says why.
    private func makeCertificate() {
        let key = directory.appendingPathComponent("tls.key").path
        let csr = directory.appendingPathComponent("tls.csr").path
        let crt = directory.appendingPathComponent("tls.crt").path
        let ext = directory.appendingPathComponent("tls.ext").path
        let out = directory.appendingPathComponent("openssl.out").path
        let ca = Repository.certificates.appendingPathComponent("ca.crt").path
        let caKey = Repository.certificates.appendingPathComponent("ca.key").path
        do {
            try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\n".utf8).write(to: URL(fileURLWithPath: ext))
            for arguments in [
                [
                    "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                    key,
                    "-subj", "/CN=localhost", "-out", csr,
                ],
                [
                    "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-set_serial",
                    "\(UInt32.random(in: 1...UInt32.max))",
                    "-days", "2", "-extfile", ext, "-out", crt,
                ],
            ] {
                let (status, _) = try Self.spawnAndWait("/usr/bin/openssl", arguments, output: out, timeout: 30)
                guard status == 0 else {
                    throw Unavailable(
                        description:
                            "openssl \(arguments[0]) failed: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")"
                    )
                }
            }
            if getuid() == 0 {
                for file in [key, crt] {
                    try FileManager.default.setAttributes(
                        [.ownerAccountName: "postgres", .groupOwnerAccountName: "postgres"], ofItemAtPath: file)
                }
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
        } catch {
            tlsUnavailable = "\(error)"
        }
    }

    /// Creates ``passwordUser`` with `password` (or sets it again), with every privilege on the test databases.
    public func createPasswordUser(password: String) throws {
        _ = try psql(
            """
            DO $$BEGIN
              IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(passwordUser)') THEN
                CREATE ROLE \(passwordUser) LOGIN SUPERUSER;
              END IF;
            END$$;
            ALTER ROLE \(passwordUser) PASSWORD '\(password)';
            """, database: "postgres")
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are ended), keeping its data.
    public func stop() throws {
        try run(
            binDirectory.appendingPathComponent("pg_ctl").path,
            ["-D", dataDirectory.path, "-m", "fast", "-w", "-t", "30", "stop"], timeout: 40)
        lock.withLock { running = false }
    }

    /// Stops the server if it runs and removes its directory.
    public func destroy() {
        if lock.withLock({ running }) { try? stop() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server and removes its directory when this process is gone (however it ends), or when the
    /// directory is removed.
    private func startWatchdog() {
        let pgctl = binDirectory.appendingPathComponent("pg_ctl").path
        let asUser = getuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : ""
        let script = """
            while kill -0 \(getpid()) 2>/dev/null && [ -d '\(directory.path)' ]; do sleep 1; done
            if [ -d '\(directory.path)' ]; then
              \(asUser)'\(pgctl)' -D '\(dataDirectory.path)' -m immediate -w -t 20 stop >/dev/null 2>&1
              rm -rf '\(directory.path)'
            fi
            """
        (try? ChildProcess("/bin/sh", ["-c", script], input: .null, output: .null))?.detach()
    }

    // MARK: Using it

    /// The URL of `database` (`postgres://kkpush@127.0.0.1:PORT/DB?sslmode=disable&connect_timeout=2`).
    public func url(_ database: String, connectTimeout: Int = 2) -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable&connect_timeout=\(connectTimeout)"
    }

    /// Creates a new database with a unique name starting with `prefix`, and returns its name.
    public func createDatabase(_ prefix: String = "t") throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        _ = try psql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// Runs SQL through `psql` (not kkpush), stopping at the first error; returns its unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        let id = UUID().uuidString.prefix(8)
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-psql-\(id).sql")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-psql-\(id).out")
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        try Data(sql.utf8).write(to: input)
        let (status, timedOut) = try Self.spawnAndWait(
            binDirectory.appendingPathComponent("psql").path,
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d",
                database, "-f", input.path,
            ], output: output.path, timeout: 120)
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard status == 0, !timedOut else {
            throw Unavailable(description: "psql failed (\(status)\(timedOut ? ", timed out" : "")): \(text)")
        }
        return text
    }

    /// Runs a server binary (as the postgres user when root) and waits for it, its output into a file.
    private func run(_ executable: String, _ arguments: [String], asServerUser: Bool = true, timeout: TimeInterval = 30)
        throws
    {
        let asRoot = getuid() == 0 && asServerUser
        let outFile = directory.appendingPathComponent("command-\(UUID().uuidString.prefix(8)).out")
        defer { try? FileManager.default.removeItem(at: outFile) }
        let (status, timedOut) = try Self.spawnAndWait(
            asRoot ? "/usr/sbin/runuser" : executable,
            asRoot ? ["-u", "postgres", "--", executable] + arguments : arguments, output: outFile.path,
            timeout: timeout)
        guard status == 0, !timedOut else {
            let text = (try? String(contentsOf: outFile, encoding: .utf8)) ?? ""
            let log =
                (try? String(contentsOf: logFile, encoding: .utf8)).map { "\nserver log:\n\($0.suffix(2000))" } ?? ""
            throw Unavailable(
                description:
                    "\((executable as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed (status \(status)\(timedOut ? ", timed out" : "")): \(text)\(log)"
            )
        }
    }

    /// Runs `executable` and waits for it (bounded by `timeout`: then it is killed), its output and error into the
    /// file `output`: `pg_ctl start` leaves the server running with them, so a pipe's reader would wait for the
    /// server to stop. The status is the exit status, or the signal that ended it.
    static func spawnAndWait(_ executable: String, _ arguments: [String], output: String, timeout: TimeInterval)
        throws -> (status: Int32, timedOut: Bool)
    {
        let child: ChildProcess
        do {
            child = try ChildProcess(executable, arguments, input: .null, output: .file(output))
        } catch {
            throw Unavailable(description: "\(error)")
        }
        let (end, timedOut) = child.wait(timeout: timeout)
        return (timedOut ? -1 : end.status, timedOut)
    }
}

extension PostgresServer {
    /// ``shared()`` off Swift's cooperative threads (starting the server blocks for a second or two).
    public static func sharedServer() async throws -> PostgresServer { try await offThread { try shared() } }

    /// ``start()`` off the cooperative threads: a server of the caller's own (``destroy()`` it).
    public static func startOwn() async throws -> PostgresServer { try await offThread { try start() } }

    /// ``createDatabase(_:)`` off the cooperative threads.
    public func newDatabase(_ prefix: String = "t") async throws -> String {
        try await offThread { try self.createDatabase(prefix) }
    }

    /// ``psql(_:database:)`` off the cooperative threads.
    @discardableResult
    public func runSQL(_ sql: String, database: String) async throws -> String {
        try await offThread { try self.psql(sql, database: database) }
    }

    /// ``stop()`` off the cooperative threads.
    public func stopServer() async throws { try await offThread { try self.stop() } }

    /// ``startServer()`` off the cooperative threads.
    public func startAgain() async throws { try await offThread { try self.startServer() } }
}

/// Schema fixtures shared by the store's and the CLI's PostgreSQL tests.
public enum PostgresSchemaFixtures {
    /// The tests' "real backend" table `app.enrollments` (its schema too), empty: the names of ``theirSchemaMap``.
    public static let theirTable = """
        CREATE SCHEMA app;
        CREATE TABLE app.enrollments (
            id text NOT NULL, club text NOT NULL, teams text[] NOT NULL, kind text NOT NULL,
            vendor_uuid text NOT NULL, push_token text, build_env text, version text,
            tester boolean NOT NULL DEFAULT false, state text NOT NULL, manager_email text,
            modified timestamptz NOT NULL, gen integer NOT NULL DEFAULT 1, token_at timestamptz,
            PRIMARY KEY (club, id));
        """

    /// The schema map of the tests' "real backend" table `app.enrollments` (other column names).
    public static let theirSchemaMap = """
        {"table": "app.enrollments", "columns": {"device_id": "id", "tenant_slug": "club", "team_codes": "teams",
         "role": "kind", "hardware_identifier": "vendor_uuid", "apns_token": "push_token",
         "build_environment": "build_env", "app_version": "version", "is_test_user": "tester", "status": "state",
         "team_manager_email": "manager_email", "updated_at": "modified", "generation": "gen",
         "token_updated_at": "token_at"}}
        """
}
