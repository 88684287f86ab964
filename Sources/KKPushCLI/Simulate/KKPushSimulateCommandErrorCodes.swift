package import KKPushCore

// The error codes only KKPushSimulateCommand throws, one per line: `kkpush simulate --json` prints them as
// {"error": {"code": …}}. Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `file-not-folder` (KKPushSimulateCommand): `--certificates` names a file, not a folder.
    package static let fileNotFolder = Self("file-not-folder", kind: .input)
    /// `file-not-pem` (KKPushSimulateCommand): a file in `--certificates` is not PEM.
    package static let fileNotPem = Self("file-not-pem", kind: .input)
    /// `simulate-certificates-empty` (KKPushSimulateCommand)
    package static let simulateCertificatesEmpty = Self("simulate-certificates-empty", kind: .input)
}
