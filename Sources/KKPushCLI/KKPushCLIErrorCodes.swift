public import KKPushCore

// The error codes only KKPushCLI throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `admin-token-invalid-characters` (KKPushCLI)
    public static let adminTokenInvalidCharacters: Self = "admin-token-invalid-characters"
    /// `admin-token-short` (KKPushCLI)
    public static let adminTokenShort: Self = "admin-token-short"
    /// `broadcast-topic-disallowed` (KKPushCLI): a broadcast's bundle id with another push type's suffix (exit 1).
    public static let broadcastTopicDisallowed: Self = "broadcast-topic-disallowed"
    /// `channel-bundle-id-invalid` (KKPushCLI)
    public static let channelBundleIdInvalid: Self = "channel-bundle-id-invalid"
    /// `backend-db-empty` (KKPushCLI)
    public static let backendDbEmpty: Self = "backend-db-empty"
    /// `backend-secret-short` (KKPushCLI)
    public static let backendSecretShort: Self = "backend-secret-short"
    /// `batch-input-empty` (KKPushCLI)
    public static let batchInputEmpty: Self = "batch-input-empty"
    /// `batch-metrics-file-clash` (KKPushCLI)
    public static let batchMetricsFileClash: Self = "batch-metrics-file-clash"
    /// `batch-metrics-file-stdout` (KKPushCLI)
    public static let batchMetricsFileStdout: Self = "batch-metrics-file-stdout"
    /// `batch-metrics-file-unwritable` (KKPushCLI)
    public static let batchMetricsFileUnwritable: Self = "batch-metrics-file-unwritable"
    /// `batch-output-is-input` (KKPushCLI)
    public static let batchOutputIsInput: Self = "batch-output-is-input"
    /// `batch-output-unwritable` (KKPushCLI)
    public static let batchOutputUnwritable: Self = "batch-output-unwritable"
    /// `batch-preflight` (KKPushCLI)
    public static let batchPreflight: Self = "batch-preflight"
    /// `batch-resume-truncated` (KKPushCLI)
    public static let batchResumeTruncated: Self = "batch-resume-truncated"
    /// `bench-missing-setting` (KKPushCLI)
    public static let benchMissingSetting: Self = "bench-missing-setting"
    /// `bench-number-range` (KKPushCLI)
    public static let benchNumberRange: Self = "bench-number-range"
    /// `bench-url` (KKPushCLI)
    public static let benchUrl: Self = "bench-url"
    /// `cert-key-with-p12` (KKPushCLI)
    public static let certKeyWithP12: Self = "cert-key-with-p12"
    /// `credential-unreadable` (KKPushCLI)
    public static let credentialUnreadable: Self = "credential-unreadable"
    /// `custom-key-taken` (KKPushCLI)
    public static let customKeyTaken: Self = "custom-key-taken"
    /// `diagnose-no-input` (KKPushCLI)
    public static let diagnoseNoInput: Self = "diagnose-no-input"
    /// `diagnose-timeout-range` (KKPushCLI)
    public static let diagnoseTimeoutRange: Self = "diagnose-timeout-range"
    /// `enrollment-exists` (KKPushCLI)
    public static let enrollmentExists: Self = "enrollment-exists"
    /// `file-not-folder` (KKPushCLI)
    public static let fileNotFolder: Self = "file-not-folder"
    /// `file-not-pem` (KKPushCLI)
    public static let fileNotPem: Self = "file-not-pem"
    /// `file-not-sqlite` (KKPushCLI)
    public static let fileNotSqlite: Self = "file-not-sqlite"
    /// `file-not-writable` (KKPushCLI)
    public static let fileNotWritable: Self = "file-not-writable"
    /// `key-environment-without-key` (KKPushCLI)
    public static let keyEnvironmentWithoutKey: Self = "key-environment-without-key"
    /// `key-incomplete` (KKPushCLI)
    public static let keyIncomplete: Self = "key-incomplete"
    /// `migrate-mapped-table` (KKPushCLI)
    public static let migrateMappedTable: Self = "migrate-mapped-table"
    /// `mock-certificates-invalid` (KKPushCLI)
    public static let mockCertificatesInvalid: Self = "mock-certificates-invalid"
    /// `mock-key-file-invalid` (KKPushCLI)
    public static let mockKeyFileInvalid: Self = "mock-key-file-invalid"
    /// `mock-pem-invalid` (KKPushCLI)
    public static let mockPemInvalid: Self = "mock-pem-invalid"
    /// `openssl-speed-failed` (KKPushCLI)
    public static let opensslSpeedFailed: Self = "openssl-speed-failed"
    /// `output-exists` (KKPushCLI)
    public static let outputExists: Self = "output-exists"
    /// `output-is-file` (KKPushCLI)
    public static let outputIsFile: Self = "output-is-file"
    /// `output-write-failed` (KKPushCLI)
    public static let outputWriteFailed: Self = "output-write-failed"
    /// `probe-no-credential` (KKPushCLI)
    public static let probeNoCredential: Self = "probe-no-credential"
    /// `probe-no-token` (KKPushCLI)
    public static let probeNoToken: Self = "probe-no-token"
    /// `proxy-url` (KKPushCLI)
    public static let proxyUrl: Self = "proxy-url"
    /// `secret-conflict` (KKPushCLI)
    public static let secretConflict: Self = "secret-conflict"
    /// `secret-file-empty` (KKPushCLI)
    public static let secretFileEmpty: Self = "secret-file-empty"
    /// `secret-file-unreadable` (KKPushCLI)
    public static let secretFileUnreadable: Self = "secret-file-unreadable"
    /// `send-ca-file-invalid` (KKPushCLI)
    public static let sendCaFileInvalid: Self = "send-ca-file-invalid"
    /// `send-data-flag` (KKPushCLI)
    public static let sendDataFlag: Self = "send-data-flag"
    /// `send-no-credential` (KKPushCLI)
    public static let sendNoCredential: Self = "send-no-credential"
    /// `send-no-payload` (KKPushCLI)
    public static let sendNoPayload: Self = "send-no-payload"
    /// `send-no-topic` (KKPushCLI)
    public static let sendNoTopic: Self = "send-no-topic"
    /// `send-timeout-range` (KKPushCLI)
    public static let sendTimeoutRange: Self = "send-timeout-range"
    /// `simulate-certificates-empty` (KKPushCLI)
    public static let simulateCertificatesEmpty: Self = "simulate-certificates-empty"
    /// `tenant-unknown` (KKPushCLI)
    public static let tenantUnknown: Self = "tenant-unknown"
    /// `mock-ports-clash` (KKPushCLI): two of the mock's listeners given one port.
    public static let mockPortsClash: Self = "mock-ports-clash"
}
