// swift-tools-version:6.0
//
// kkpush: the push toolkit of Kantine Koning.
//
// Dependencies, and why each one is here (keep this list lean: CI builds all of it from scratch):
// - swift-argument-parser: the `kkpush` command line.
// - swift-log: the `Logger` API libraries accept (no output by default; the CLI sets it up).
// - swift-nio, swift-nio-http2: the mock APNs server (HTTP/2 over TLS with ALPN h2) and the simulated backend. The
//   mock's frames are encoded and decoded by libnghttp2 (below); its connection handler speaks swift-nio-http2's
//   frame, header-list and stream-id types, and the tests' HTTP/2 clients on EmbeddedChannels are NIOHTTP2Handlers. Its
//   TLS is KKPushTLS, a NIO handler on the system's OpenSSL, not swift-nio-ssl: that vendors BoringSSL, whose C
//   files were about 90 s of a fresh debug build on 2 cores (of 260 s to the main job's first output). The client side does not use them: it sends through libcurl. The tests' headless
//   Chromium driver (Tests/KKPushTestSupport) uses swift-nio's NIOWebSocket for the DevTools Protocol.
// - swift-property-based (tests only): property-based tests of the payload and token rules.
// - swift-docc-plugin (a command plugin, never linked): `swift package generate-documentation --target X` for
//   the DocC catalogs in Sources/<target>/<target>.docc. `swift build` does not build it; it costs CI only its
//   resolve (about 5 s for it and swift-docc-symbolkit); generating one target's documentation takes 35 s cold,
//   15 s warm on 2 shared cores.
// - swift-prometheus (and swift-metrics, which it brings): the Prometheus metrics of the mock's admin port,
//   the backend and `send-batch --metrics-file`, in the text exposition format from its
//   `PrometheusCollectorRegistry` (one registry per server, not swift-metrics' process-wide bootstrap, so
//   servers in one process count apart; no hand-written exposition format).
// - swift-asn1: the DER form of a code signature's entitlements (the 0xfade7172 blob `kkpush build inspect` reads from
//   a Mach-O executable). Small, no dependencies.
// - ZIPFoundation: reads an `.ipa` entry by entry (central directory first, then one member streamed through zlib
//   into a bounded buffer), so an archive is never unpacked whole and a zip bomb stops at the limit. Links the
//   system zlib (zlib1g-dev).
// System libraries (through pkg-config): libcurl (HTTP/2 client, with nghttp2), libnghttp2 (libnghttp2-dev: the mock's
// HTTP/2 framing and HPACK: the mock's request costs a fifth fewer instructions than on NIOHTTP2Handler), OpenSSL 3
// (ES256 provider tokens, PKCS#12 and certificate inspection) and libpq (libpq-dev: the PostgreSQL enrollment
// store, `--db postgres://...`, connecting as psql does: conninfo strings, PG* variables, ~/.pgpass,
// pg_service.conf, Unix sockets, every sslmode) and SQLite 3 (libsqlite3-dev: the default enrollment store, a file;
// the system's library instead of sqlite-nio's vendored amalgamation, which every build compiled again: 30 s of one
// core in debug, more in release, and sqlite-nio's own module on top).
import PackageDescription

let package = Package(
    name: "kkpush",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "kkpush", targets: ["kkpush"]),
        .executable(name: "kkpush-simulate", targets: ["kkpush-simulate"]),
        .library(name: "KKPushCore", targets: ["KKPushCore"]),
        .library(name: "KantineKoning", targets: ["KantineKoning"]),
        .library(name: "KKPushAuth", targets: ["KKPushAuth"]),
        .library(name: "KKPushClient", targets: ["KKPushClient"]),
        .library(name: "KKPushMock", targets: ["KKPushMock"]),
        .library(name: "KKPushStore", targets: ["KKPushStore"]),
        .library(name: "KKPushBackend", targets: ["KKPushBackend"]),
        .library(name: "KKPushBuild", targets: ["KKPushBuild"]),
        .library(name: "KantineKoningSigning", targets: ["KantineKoningSigning"]),
        .library(name: "KantineKoningReceipts", targets: ["KantineKoningReceipts"]),
        .library(name: "KKPushActivities", targets: ["KKPushActivities"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.36.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.19"),
    ],
    targets: [
        // C bridges. Each has a shim header with fixed-signature wrappers for the variadic and
        // macro APIs Swift cannot call directly.
        .systemLibrary(
            name: "CCurl",
            path: "Sources/CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The few libc structures kkpush reads (file status, time, rlimit, loopback sockets) and thread names, behind
        // functions and structures of its own, so no Swift file reads a glibc structure's fields (see
        // MemberImportVisibility below).
        .systemLibrary(name: "CKKPushSystem", path: "Sources/CKKPushSystem"),
        .systemLibrary(
            name: "CNGHTTP2",
            path: "Sources/CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The APNs model: environments, reasons, push types, the payload model and rules, the request
        // rules. Nothing of the Kantine Koning app: a library user can depend on it without the app.
        .target(name: "KKPushCore"),
        // The operating system's side of the libraries: the one check and read of a file a user names (InputFile:
        // missing, a folder, empty, too large, content given where its path goes), atomic writes (AtomicFile),
        // errno and IP address text. Apart from KKPushCore so that the APNs model does no I/O.
        .target(name: "KKPushSystem", dependencies: ["KKPushCore", "CKKPushSystem"]),
        // The Kantine Koning app's model on top of KKPushCore: enrollments and token updates, its
        // payloads and deep links, build environments and the backend's environment resolution, and
        // `kkpush diagnose`'s rules (they judge enrollments and token updates).
        // The app's model; its push-receipt contract's names come from the app-side KantineKoningReceipts, so the
        // app and the backend cannot disagree on them.
        .target(name: "KantineKoning", dependencies: ["KKPushCore", "KantineKoningReceipts"]),
        // What a signed iOS/macOS build says about itself: provisioning profiles (CMS through OpenSSL), property
        // lists, Mach-O code signatures and their entitlements, .ipa/.app/.xcarchive containers
        // (`kkpush build inspect`, `diagnose --build`).
        .target(
            name: "KKPushBuild",
            dependencies: [
                "KKPushCore", "KKPushSystem", "COpenSSL",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ]
        ),
        // For the app itself: Foundation only, no kkpush dependencies, so an iOS app can add it as it is. Reads the
        // running app's embedded provisioning profile and answers the aps-environment it is signed for.
        .target(name: "KantineKoningSigning"),
        // For the app too: Foundation only (FoundationNetworking on Linux). Builds the push receipt the app's
        // Notification Service Extension or push handler posts to the backend, and posts it with the device JWT. A
        // target of its own rather than in KantineKoningSigning: a Notification Service Extension adds it alone (it
        // reads no provisioning profile), and the signing reader stays free of networking.
        .target(name: "KantineKoningReceipts"),
        // Provider credentials on OpenSSL 3: ES256 tokens, .p8 keys, .p12/PEM certificates.
        .target(
            name: "KKPushAuth",
            dependencies: [
                "KKPushCore", "KKPushSystem", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The APNs client on libcurl's multi interface.
        .target(
            name: "KKPushClient",
            dependencies: [
                "KKPushCore", "KKPushAuth", "CCurl", "CKKPushSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The one HTTP/1.1 stack of the mock's admin API and the simulated backend: a server on
        // NIOAsyncChannel with a declarative router, the connection tracker, the JSON writer; and the
        // simulated app's HTTP/1.1 client. Not a product: its API is `package`, shared by the package's own modules only.
        .target(
            name: "KKPushHTTP",
            dependencies: [
                "KKPushCore", "KKPushSystem", "CKKPushSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // TLS for NIO channels on the system's OpenSSL (memory BIOs): the mock's listener, and the tests' raw
        // TLS clients. Not a product: its API is `package`.
        .target(
            name: "KKPushTLS",
            dependencies: [
                "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // The mock APNs server (SwiftNIO, HTTP/2 over TLS).
        .target(
            name: "KKPushMock",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KKPushAuth", "KKPushHTTP", "CNGHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The admin API's socket-free exchange (MockAdminExchange) runs on an EmbeddedChannel.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                "KKPushTLS",
                // TLSUserEvent: a connection's timers start when its TLS handshake completes.
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The web console's page, script and style sheet, compiled into the binary as byte arrays.
            resources: [
                .embedInCode("Admin/Console/console.html"), .embedInCode("Admin/Console/console.js"),
                .embedInCode("Admin/Console/console.css"),
            ]
        ),
        // The enrollment store the backend keeps its device registrations in: SQLite (the system's libsqlite3) and
        // PostgreSQL (libpq), each connection on a thread of its own; schema maps for the backend's own table, the
        // migration, streaming reads. What `diagnose`, `audit` and `token verify` open on a production database: it
        // links the model and the C libraries, not NIO, the APNs client or Prometheus.
        .target(
            name: "KKPushStore",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KantineKoning", "CLibPQ", "CSQLite", "CKKPushSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The simulated Kantine Koning backend: device JWTs, the app's HTTP API on KKPushHTTP, the team fan-out
        // through the APNs client, enrollment reconciliation, its metrics.
        .target(
            name: "KKPushBackend",
            dependencies: [
                "KKPushCore", "KantineKoning", "KKPushStore", "KKPushAuth", "KKPushClient", "KKPushHTTP",
                "CKKPushSystem", "KKPushActivities",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The simulated Kantine Koning app and the end-to-end simulation.
        .target(
            name: "KKPushSimulator",
            dependencies: [
                "KKPushCore", "KantineKoning", "KKPushAuth", "KKPushClient", "KKPushMock", "KKPushStore",
                "KKPushBackend", "KKPushActivities",
                "KKPushHTTP", "KantineKoningReceipts",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `send-batch`'s engine: the token file read line by line, the ledger of results (JSON lines, the summary's
        // counts, the Prometheus metrics), `--resume`'s books, broadcasts in a batch, and the run that sends them,
        // stops on a signal and drains. Not a product: its API is `package`; the CLI parses the flags and prints.
        .target(
            name: "KKPushBatch",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KKPushAuth", "KKPushClient", "CKKPushSystem", "KKPushActivities",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The push queue in PostgreSQL and `kkpush worker`'s engine: kkpush's own table and its versioned migration,
        // claims under a lease (FOR UPDATE SKIP LOCKED), each row's outcome, LISTEN/NOTIFY on KKPushStore's libpq
        // connection, the worker's metrics. Apart from KKPushStore, which must not link the APNs client or
        // Prometheus (`diagnose` opens it on a production database). Not a product: its API is `package`.
        .target(
            name: "KKPushQueue",
            dependencies: [
                "KKPushCore", "KKPushStore", "KKPushClient", "KKPushAuth", "KKPushActivities",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // What a build's signature means for the app's pushes: KKPushBuild's report judged with KantineKoning's
        // build environments and the backend's resolution (`build inspect`, `diagnose --build`). A target of its
        // own rather than in KantineKoning: KantineKoning could depend on KKPushBuild without a cycle, but it is a
        // product whose users would then link OpenSSL, SwiftASN1 and ZIPFoundation for a model they do not need, and
        // its API is `public`. Not a product: its API is `package`.
        .target(
            name: "KKPushBuildJudgement", dependencies: ["KKPushCore", "KKPushSystem", "KKPushBuild", "KantineKoning"]),
        // Server trust: a TLS handshake with an APNs host (or the mock) on OpenSSL, the chain it serves, and whether
        // a trust store (the system bundle, a CA file or folder) or a pin set accepts it, naming the root that is
        // missing; and the stand-in chains with the real roots' names the mock can serve. A target of its own: a
        // blocking client check needs no NIO (KKPushTLS is the mock's NIO handler), KKPushAuth is the public
        // product of provider credentials, and `diagnose` (KKPushDiagnosis) and `tls check` both use it. Not a
        // product: its API is `package`.
        .target(name: "KKPushTrust", dependencies: ["KKPushCore", "KKPushSystem", "COpenSSL"]),
        // The reader of an app's `ActivityAttributes` Swift source (`payload activity-attributes`) into KKPushCore's
        // `ActivityAttributesDescription`: tool-side, apart from KKPushCore (the APNs model, which reads no Swift and
        // does no I/O). A hand reader, not swift-syntax: swift-syntax would add about 100 s to a fresh debug build and
        // minutes to the release build for files a few dozen lines long, and what decides the JSON (synthesized
        // Codable, CodingKeys, aliases across files) is above the syntax either way. Not a product: its API is
        // `package`.
        .target(name: "KKPushActivityAttributes", dependencies: ["KKPushCore"]),
        // The Live Activity registry: per device and attributes type the push-to-start token and its rotations, per
        // activity its key, state and update token, the per-device start budget; idempotent starts, updates and ends
        // routed to the current update token, APNs' answers fed back. In kkpush's own tables in an SQLite file or
        // PostgreSQL, on KKPushStore's connections (libsqlite3, libpq); it plans pushes and does not send them, so it
        // links no APNs client (the queue, send-batch, the CLI and the simulator send through their own).
        .target(name: "KKPushActivities", dependencies: ["KKPushCore", "KKPushStore"]),
        // The facts `diagnose` and `audit` gather beyond the flags: the APNs probe, an enrollment store opened
        // read-only, `audit --probe`'s prober and its state file; `token prune`'s evidence (those state files,
        // send-batch's results, the push queue) and its plan. Not a product: its API is `package`.
        .target(
            name: "KKPushDiagnosis",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KantineKoning", "KKPushAuth", "KKPushClient", "KKPushStore",
                "KKPushTrust",
            ]
        ),
        // The bench harnesses: the rate benchmark, the fault matrix (this binary's send-batch against the in-process
        // mock, once per fault) and the soak (send-batch against mock serve, two processes, sampled). The caller
        // spells the child processes' command lines. Not a product: its API is `package`.
        .target(
            name: "KKPushBench",
            dependencies: ["KKPushCore", "KKPushSystem", "KKPushAuth", "KKPushClient", "KKPushMock", "KKPushHTTP"]
        ),
        // What every command line shares: the one exit-code table and error report (library words into flags),
        // the command's streams, the numeric flag checks, JSON output, the entry point that parses and runs a root
        // command. Apart from KKPushCLI so `kkpush-simulate` links it without the other commands. Not a product: its
        // API is `package`.
        .target(
            name: "KKPushCLISupport",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KantineKoning",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/KKPushCLI/Shared"
        ),
        // `kkpush simulate`, and the root of `kkpush-simulate`: the same command as an executable of its own. Not a
        // product: its API is `package`.
        .target(
            name: "KKPushSimulateCommand",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KantineKoning", "KKPushBackend", "KKPushSimulator", "KKPushCLISupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/KKPushCLI/Simulate"
        ),
        // Every `kkpush` command, in a library so tests can run them in-process. Its folder holds the two targets
        // above too (Shared, Simulate): every source file of the command line lives under Sources/KKPushCLI.
        .target(
            name: "KKPushCLI",
            dependencies: [
                "KKPushCLISupport", "KKPushSimulateCommand",
                "KKPushCore", "KKPushSystem", "KantineKoning", "KKPushBuild", "KKPushAuth", "KKPushClient",
                "KKPushMock", "KKPushStore", "KKPushBackend", "KKPushSimulator", "KKPushHTTP", "CKKPushSystem",
                "KKPushBatch", "KKPushBuildJudgement", "KKPushDiagnosis", "KKPushBench", "KKPushTrust",
                "KKPushQueue", "KKPushActivityAttributes", "KKPushActivities",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // `kkpush worker --http`: the statuses of its answers on KKPushHTTP's server.
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            exclude: ["Shared", "Simulate"]
        ),
        // The thin executable. Its man page, man/kkpush.1, is generated from the commands (.ci/gen-manual).
        .executableTarget(name: "kkpush", dependencies: ["KKPushCLI"], exclude: ["man"]),
        // `kkpush simulate` alone, the README's first command: its build leaves out the other commands and what only
        // they link (KKPushBuild with SwiftASN1 and ZIPFoundation, the batch, queue, diagnosis, trust and bench
        // targets), about a quarter of a fresh build's compile time.
        .executableTarget(
            name: "kkpush-simulate", dependencies: ["KKPushSimulateCommand", "KKPushCLISupport", "KKPushAuth"]),
        // The README's library example, compiled with the package (a test checks the README shows this file).
        .executableTarget(
            name: "kkpush-example", dependencies: ["KKPushAuth", "KKPushClient", "KKPushCore", "KKPushMock"],
            path: "Sources/KKPushExample"),
        // The libFuzzer targets of every parser that takes outside input (issue #15), one binary for
        // all of them: `.ci/fuzz` builds it with `-sanitize=fuzzer -DKKPUSH_FUZZING` (then libFuzzer
        // drives the target named by KKPUSH_FUZZ_TARGET); in a normal build it replays corpus files
        // (`swift run KKPushFuzz Tests/Fuzz/Corpus/json`) and runs seeded mutations of them without coverage
        // feedback (`--mutate`, CI's slice on the debug build the tests made), so `swift build` keeps it compiling.
        .executableTarget(
            name: "KKPushFuzz",
            dependencies: [
                "KKPushCore", "KKPushSystem", "KantineKoning", "KKPushBuild", "KKPushAuth", "KKPushClient",
                "KKPushMock", "KKPushStore", "KKPushBackend", "KKPushBatch",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // What the test targets share: the repository root and `Certificates/` lookup, temporary
        // directories, the process runner, test tokens. Not a product.
        // HeadlessChromium speaks the Chrome DevTools Protocol over a WebSocket (NIOWebSocket; tests only).
        .target(
            name: "KKPushTestSupport",
            dependencies: [
                "KKPushHTTP", "CKKPushSystem",
                // The fixtures an engine's test target and the CLI's both use (PushQueueFixtures,
                // ServerTrustFixtures, TokenPruneFixtures): one copy here rather than one in each test target.
                "KKPushCore", "KKPushSystem", "KKPushAuth", "KKPushClient", "KKPushMock", "KKPushStore", "KKPushQueue",
                "KKPushTrust", "KKPushDiagnosis",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Tests/KKPushTestSupport"),
        .testTarget(
            name: "KKPushCoreTests",
            dependencies: [
                "KKPushTestSupport", "KKPushCore", "KKPushSystem", "CKKPushSystem",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "KantineKoningTests",
            dependencies: [
                "KKPushTestSupport", "KantineKoning", "KKPushCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "KKPushBuildTests", dependencies: ["KKPushTestSupport", "KKPushBuild", "KKPushCore"]),
        .testTarget(
            name: "KantineKoningSigningTests",
            dependencies: ["KKPushTestSupport", "KantineKoningSigning", "KKPushCore"]),
        // The app-side receipt helper against the simulated backend over loopback HTTP.
        .testTarget(
            name: "KantineKoningReceiptsTests",
            dependencies: [
                "KKPushTestSupport", "KantineKoningReceipts", "KKPushBackend", "KantineKoning", "KKPushCore",
            ]),
        .testTarget(
            name: "KKPushAuthTests", dependencies: ["KKPushSystem", "KKPushTestSupport", "KKPushAuth", "KKPushCore"]),
        .testTarget(
            name: "KKPushTLSTests",
            dependencies: [
                "KKPushTestSupport", "KKPushTLS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "KKPushMockTests",
            dependencies: [
                "KKPushTestSupport", "KKPushMock", "KKPushAuth", "KKPushCore", "KKPushSystem", "KKPushClient",
                "CKKPushSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "KKPushTLS",
                // The connection handler driven on EmbeddedChannels in virtual time (MockVirtualTimeTests).
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "KKPushClientTests",
            dependencies: ["KKPushTestSupport", "KKPushClient", "KKPushMock", "KKPushAuth", "KKPushCore"]),
        .testTarget(
            name: "KKPushBackendTests",
            dependencies: [
                "KKPushTestSupport", "KKPushStore", "KKPushBackend", "KantineKoning", "KKPushClient", "KKPushMock",
                "KKPushAuth", "KKPushCore", "KKPushSystem", "KKPushActivities",
            ]
        ),
        .testTarget(
            name: "KKPushSimulatorTests",
            dependencies: [
                "KKPushTestSupport", "KKPushSimulator", "KKPushStore", "KKPushBackend", "KantineKoning", "KKPushClient",
                "KKPushMock",
                "KKPushAuth", "KKPushCore", "KKPushDiagnosis", "KantineKoningReceipts",
            ]
        ),
        .testTarget(
            name: "KKPushDiagnosisTests",
            dependencies: [
                "KKPushTestSupport", "KKPushDiagnosis", "KantineKoning", "KKPushClient", "KKPushMock", "KKPushAuth",
                "KKPushCore", "KKPushStore",
            ]),
        .testTarget(
            name: "KKPushActivityAttributesTests",
            dependencies: ["KKPushTestSupport", "KKPushActivityAttributes", "KKPushCore"]),
        // The activity registry against an SQLite file and a real PostgreSQL.
        .testTarget(
            name: "KKPushActivitiesTests",
            dependencies: ["KKPushTestSupport", "KKPushActivities", "KKPushStore", "KKPushCore"]),
        // The engines of send-batch, the push queue and the bench harnesses, tested where they live.
        .testTarget(
            name: "KKPushBatchTests",
            dependencies: [
                "KKPushTestSupport", "KKPushBatch", "KKPushCore", "KKPushActivities", "KKPushAuth", "KKPushClient",
                "KKPushMock", "KKPushSystem",
            ]),
        .testTarget(
            name: "KKPushQueueTests",
            dependencies: [
                "KKPushTestSupport", "KKPushQueue", "KKPushStore", "KKPushClient", "KKPushMock", "KKPushCore",
                "KKPushActivities",
            ]),
        .testTarget(
            name: "KKPushBenchTests",
            dependencies: [
                "KKPushTestSupport", "KKPushBench", "KKPushAuth", "KKPushClient", "KKPushCore", "KKPushMock",
            ]),
        // The reports of build inspect and tls check, tested where they are made.
        .testTarget(
            name: "KKPushBuildJudgementTests",
            dependencies: ["KKPushTestSupport", "KKPushBuildJudgement", "KKPushBuild", "KantineKoning", "KKPushCore"]),
        .testTarget(
            name: "KKPushTrustTests", dependencies: ["KKPushTestSupport", "KKPushTrust", "KKPushSystem", "KKPushCore"]),
        .testTarget(
            name: "KKPushCLITests",
            dependencies: [
                "KKPushTestSupport", "KKPushCLI", "KKPushCLISupport", "KKPushSimulateCommand", "kkpush-simulate",
                "KKPushCore", "KKPushSystem", "KantineKoning", "KKPushMock",
                "KKPushStore", "KKPushBackend", "KKPushHTTP", "kkpush", "KKPushBatch", "KKPushBuildJudgement",
                "KKPushDiagnosis", "KKPushBench", "KKPushTrust", "KKPushQueue", "KKPushClient", "KKPushAuth",
                "KKPushActivityAttributes", "KKPushActivities",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// The strict settings the Swift server anchors build with (swift-nio, hummingbird), on every Swift target: existentials
// spelled `any`, and imports internal unless a file says `public import` or `package import`
// (InternalImportsByDefault), so what a module's API shows of a dependency is declared where it is shown;
// and a member (a method, a property, an initializer) is visible only in a file that imports its module
// (MemberImportVisibility). On Linux Swift attributes a glibc structure's fields and initializers (`st_mode`,
// `tv_nsec`, `timespec()`) to whichever clang module loaded the glibc header first (Glibc, CDispatch, CoreFoundation,
// a package's C module), which differs between an incremental and a fresh build: no Swift file reads a glibc
// structure; the C bridge CKKPushSystem does, into structures of its own. No public or package declaration names a
// C type through Foundation: the one that names `mode_t` (`AtomicFile.write`) imports Glibc.
for target in package.targets where target.type != .system {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("InternalImportsByDefault"),
            .enableUpcomingFeature("MemberImportVisibility"),
        ]
}
