package import KKPushCore

// The error codes only KKPushSystem throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `output-exists` (KKPushSystem): a file an output folder would get exists, and replacing it was not asked for.
    package static let outputExists = Self("output-exists", kind: .input)
    /// `output-is-file` (KKPushSystem): the output folder named is a file.
    package static let outputIsFile = Self("output-is-file", kind: .input)
}
