package import KKPushCore

// The error codes only KKPushCLI throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `admin-token-invalid-characters` (KKPushCLI)
    package static let adminTokenInvalidCharacters: Self = "admin-token-invalid-characters"
    /// `admin-token-short` (KKPushCLI)
    package static let adminTokenShort: Self = "admin-token-short"
    /// `broadcast-topic-disallowed` (KKPushCLI): a broadcast's bundle id with another push type's suffix (exit 1).
    package static let broadcastTopicDisallowed: Self = "broadcast-topic-disallowed"
    /// `channel-bundle-id-invalid` (KKPushCLI)
    package static let channelBundleIdInvalid: Self = "channel-bundle-id-invalid"
    /// `backend-db-empty` (KKPushCLI)
    package static let backendDbEmpty: Self = "backend-db-empty"
    /// `backend-secret-short` (KKPushCLI)
    package static let backendSecretShort: Self = "backend-secret-short"
    /// `batch-input-empty` (KKPushCLI)
    package static let batchInputEmpty: Self = "batch-input-empty"
    /// `batch-metrics-file-clash` (KKPushCLI)
    package static let batchMetricsFileClash: Self = "batch-metrics-file-clash"
    /// `batch-metrics-file-stdout` (KKPushCLI)
    package static let batchMetricsFileStdout: Self = "batch-metrics-file-stdout"
    /// `batch-metrics-file-unwritable` (KKPushCLI)
    package static let batchMetricsFileUnwritable: Self = "batch-metrics-file-unwritable"
    /// `batch-output-is-input` (KKPushCLI)
    package static let batchOutputIsInput: Self = "batch-output-is-input"
    /// `batch-output-unwritable` (KKPushCLI)
    package static let batchOutputUnwritable: Self = "batch-output-unwritable"
    /// `batch-preflight` (KKPushCLI)
    package static let batchPreflight: Self = "batch-preflight"
    /// `batch-resume-truncated` (KKPushCLI)
    package static let batchResumeTruncated: Self = "batch-resume-truncated"
    /// `bench-missing-setting` (KKPushCLI)
    package static let benchMissingSetting: Self = "bench-missing-setting"
    /// `bench-number-range` (KKPushCLI)
    package static let benchNumberRange: Self = "bench-number-range"
    /// `bench-url` (KKPushCLI)
    package static let benchUrl: Self = "bench-url"
    /// `cert-key-with-p12` (KKPushCLI)
    package static let certKeyWithP12: Self = "cert-key-with-p12"
    /// `credential-unreadable` (KKPushCLI)
    package static let credentialUnreadable: Self = "credential-unreadable"
    /// `custom-key-taken` (KKPushCLI)
    package static let customKeyTaken: Self = "custom-key-taken"
    /// `diagnose-no-input` (KKPushCLI)
    package static let diagnoseNoInput: Self = "diagnose-no-input"
    /// `diagnose-timeout-range` (KKPushCLI)
    package static let diagnoseTimeoutRange: Self = "diagnose-timeout-range"
    /// `enrollment-exists` (KKPushCLI)
    package static let enrollmentExists: Self = "enrollment-exists"
    /// `file-not-sqlite` (KKPushCLI)
    package static let fileNotSqlite: Self = "file-not-sqlite"
    /// `file-not-writable` (KKPushCLI)
    package static let fileNotWritable: Self = "file-not-writable"
    /// `key-environment-without-key` (KKPushCLI)
    package static let keyEnvironmentWithoutKey: Self = "key-environment-without-key"
    /// `key-incomplete` (KKPushCLI)
    package static let keyIncomplete: Self = "key-incomplete"
    /// `migrate-mapped-table` (KKPushCLI)
    package static let migrateMappedTable: Self = "migrate-mapped-table"
    /// `mock-certificates-invalid` (KKPushCLI)
    package static let mockCertificatesInvalid: Self = "mock-certificates-invalid"
    /// `mock-key-file-invalid` (KKPushCLI)
    package static let mockKeyFileInvalid: Self = "mock-key-file-invalid"
    /// `mock-pem-invalid` (KKPushCLI)
    package static let mockPemInvalid: Self = "mock-pem-invalid"
    /// `openssl-speed-failed` (KKPushCLI)
    package static let opensslSpeedFailed: Self = "openssl-speed-failed"
    /// `output-exists` (KKPushCLI)
    package static let outputExists: Self = "output-exists"
    /// `output-is-file` (KKPushCLI)
    package static let outputIsFile: Self = "output-is-file"
    /// `output-write-failed` (KKPushCLI)
    package static let outputWriteFailed: Self = "output-write-failed"
    /// `probe-no-credential` (KKPushCLI)
    package static let probeNoCredential: Self = "probe-no-credential"
    /// `probe-no-token` (KKPushCLI)
    package static let probeNoToken: Self = "probe-no-token"
    /// `proxy-url` (KKPushCLI)
    package static let proxyUrl: Self = "proxy-url"
    /// `secret-conflict` (KKPushCLI)
    package static let secretConflict: Self = "secret-conflict"
    /// `secret-file-empty` (KKPushCLI)
    package static let secretFileEmpty: Self = "secret-file-empty"
    /// `secret-file-unreadable` (KKPushCLI)
    package static let secretFileUnreadable: Self = "secret-file-unreadable"
    /// `send-ca-file-invalid` (KKPushCLI)
    package static let sendCaFileInvalid: Self = "send-ca-file-invalid"
    /// `send-data-flag` (KKPushCLI)
    package static let sendDataFlag: Self = "send-data-flag"
    /// `send-no-credential` (KKPushCLI)
    package static let sendNoCredential: Self = "send-no-credential"
    /// `send-no-payload` (KKPushCLI)
    package static let sendNoPayload: Self = "send-no-payload"
    /// `send-no-topic` (KKPushCLI)
    package static let sendNoTopic: Self = "send-no-topic"
    /// `send-timeout-range` (KKPushCLI)
    package static let sendTimeoutRange: Self = "send-timeout-range"
    /// `tenant-unknown` (KKPushCLI)
    package static let tenantUnknown: Self = "tenant-unknown"
    /// `mock-ports-clash` (KKPushCLI): two of the mock's listeners given one port.
    package static let mockPortsClash: Self = "mock-ports-clash"
    /// `queue-token-invalid` (KKPushCLI): a line of `queue enqueue --tokens` that is not a hex token.
    package static let queueTokenInvalid: Self = "queue-token-invalid"
}
