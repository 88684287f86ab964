import KKPushCore

/// One `-----BEGIN <label>----- … -----END <label>-----` block.
struct PEMBlock: Sendable, Equatable {
    /// The label, for example `PRIVATE KEY`.
    var label: String
    /// The decoded body.
    var der: [UInt8]

    /// Every PEM block in `text`, in order. Headers inside a block (`Proc-Type:`, the old
    /// encrypted-PEM form) are kept out of the body and reported as `encryptedLegacy`.
    static func blocks(in text: String) -> [(block: PEMBlock, hasHeaders: Bool)]? {
        var result: [(PEMBlock, Bool)] = []
        var label: String?
        var body = ""
        var hasHeaders = false
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if let current = label {
                if line.hasPrefix("-----END ") {
                    guard line == "-----END \(current)-----", let der = Base64URL.decodeLenient(body) else {
                        return nil
                    }
                    result.append((PEMBlock(label: current, der: der), hasHeaders))
                    label = nil
                    body = ""
                    hasHeaders = false
                } else if line.contains(":") {
                    hasHeaders = true
                } else {
                    body += line
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----"), line.count > 16 {
                label = String(line.dropFirst(11).dropLast(5))
            }
        }
        if label != nil { return nil }
        return result
    }

    /// A PEM text for `der` under `label`, wrapped at 64 columns.
    static func encode(label: String, der: [UInt8]) -> String {
        let base64 = Array(Base64URL.encodeStandard(der))
        var text = "-----BEGIN \(label)-----\n"
        var start = 0
        while start < base64.count {
            let end = min(start + 64, base64.count)
            text += String(base64[start..<end]) + "\n"
            start = end
        }
        return text + "-----END \(label)-----\n"
    }
}
