// The error codes more than one module throws, and KKPushCore's own, one per line: `kkpush … --json` prints them as
// {"error": {"code": …}}. Each module declares the codes only it throws (`<Module>ErrorCodes.swift`), so a layer's
// codes live with the layer; a code is a stable string, the member is how Swift code names it.

extension KKPushError.Code {
    /// `bench-faults-spawn` (KKPushBench, KKPushCLI)
    public static let benchFaultsSpawn = Self("bench-faults-spawn", kind: .failed)
    /// `batch-input-read-error` (KKPushCore)
    public static let batchInputReadError = Self("batch-input-read-error", kind: .input)
    /// `batch-input-unreadable` (KKPushCore)
    public static let batchInputUnreadable = Self("batch-input-unreadable", kind: .input)
    /// `batch-stdin-unreadable` (KKPushCore)
    public static let batchStdinUnreadable = Self("batch-stdin-unreadable", kind: .input)
    /// `endpoint-host` (KKPushCore)
    public static let endpointHost = Self("endpoint-host", kind: .usage)
    /// `endpoint-port` (KKPushCore)
    public static let endpointPort = Self("endpoint-port", kind: .usage)
    /// `endpoint-scheme` (KKPushCore)
    public static let endpointScheme = Self("endpoint-scheme", kind: .usage)
    /// `enrollment-malformed` (KKPushCLI, KantineKoning)
    public static let enrollmentMalformed = Self("enrollment-malformed", kind: .input)
    /// `enrollment-not-found` (KKPushBackend, KKPushCLI)
    public static let enrollmentNotFound = Self("enrollment-not-found", kind: .verdict)
    /// `file-empty` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileEmpty = Self("file-empty", kind: .input)
    /// `file-is-directory` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileIsDirectory = Self("file-is-directory", kind: .input)
    /// `file-given-inline` (KKPushCore): a file argument was given the file's content (JSON, a PEM block).
    public static let fileGivenInline = Self("file-given-inline", kind: .usage)
    /// `file-missing` (KKPushCLI, KKPushCore)
    public static let fileMissing = Self("file-missing", kind: .input)
    /// `file-not-text` (KKPushCore)
    public static let fileNotText = Self("file-not-text", kind: .input)
    /// `file-no-writer` (KKPushCore): a named pipe nothing wrote into in time.
    public static let fileNoWriter = Self("file-no-writer", kind: .input)
    /// `file-not-regular` (KKPushCore, KantineKoning): a pipe, socket or device where a file read at any offset is
    /// needed (a database).
    public static let fileNotRegular = Self("file-not-regular", kind: .input)
    /// `file-path-empty` (KKPushCLI, KKPushCore, KantineKoning)
    public static let filePathEmpty = Self("file-path-empty", kind: .input)
    /// `file-too-large` (KKPushCore)
    public static let fileTooLarge = Self("file-too-large", kind: .input)
    /// `file-unreadable` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileUnreadable = Self("file-unreadable", kind: .input)
    /// `output-folder-missing` (KKPushCore)
    public static let outputFolderMissing = Self("output-folder-missing", kind: .input)
    /// `output-is-directory` (KKPushCore)
    public static let outputIsDirectory = Self("output-is-directory", kind: .input)
    /// `output-not-writable` (KKPushCore)
    public static let outputNotWritable = Self("output-not-writable", kind: .input)
    /// `output-path-empty` (KKPushCore)
    public static let outputPathEmpty = Self("output-path-empty", kind: .input)
    /// `payload-aps-not-object` (KKPushCore)
    public static let payloadApsNotObject = Self("payload-aps-not-object", kind: .input)
    /// `payload-not-json` (KKPushCore)
    public static let payloadNotJson = Self("payload-not-json", kind: .input)
    /// `payload-not-object` (KKPushCore)
    public static let payloadNotObject = Self("payload-not-object", kind: .input)
    /// `store-malformed` (KKPushCLI, KantineKoning)
    public static let storeMalformed = Self("store-malformed", kind: .input)
    /// `store-missing` (KKPushCLI, KantineKoning)
    public static let storeMissing = Self("store-missing", kind: .input)
    /// `simulator-file-not-object` (KKPushCore): a push whose payload is not a JSON object has no `.apns` file.
    public static let simulatorFileNotObject = Self("simulator-file-not-object", kind: .input)
    /// `simulator-file-no-aps` (KKPushCore): `simctl push` refuses a file without `aps`.
    public static let simulatorFileNoAPS = Self("simulator-file-no-aps", kind: .input)
    /// `simulator-file-too-large` (KKPushCore): over `simctl push`'s 4096 bytes.
    public static let simulatorFileTooLarge = Self("simulator-file-too-large", kind: .input)
    /// `activity-attributes-invalid` (KKPushCore): an ActivityAttributes description that is not one.
    public static let activityAttributesInvalid = Self("activity-attributes-invalid", kind: .input)
}
