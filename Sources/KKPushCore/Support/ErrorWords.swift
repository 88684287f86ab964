import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An error in words, for a message: the one place that turns a caught error into text a user reads.
///
/// kkpush's own errors give their message; a system error its reason (`No such file or directory`); a library's
/// error its description when that is a sentence. Never Foundation's `Error Domain=NSCocoaErrorDomain Code=3840 …`
/// nor a Swift enum case name (`missingEndOfCentralDirectoryRecord`), which say nothing to a user.
public enum ErrorWords {
    /// The words of `error` worth adding to a message, or nil when it has none (the message then says what is
    /// wrong by itself).
    public static func cause(_ error: any Error) -> String? {
        switch error {
        case let e as KKPushError: return e.message
        case let e as KKPushError.Cause: return words(e.description)
        default: break
        }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return systemText(errno: Int32(ns.code)).lowercased() }
        if ["NSCocoaErrorDomain", "NSURLErrorDomain"].contains(ns.domain) {
            // The system's reason underneath, when Foundation kept it. On Linux that is a `POSIXError` value, which
            // does not cast to NSError (`as? NSError` is nil there): cast to Error, then read it.
            if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? any Error, let text = cause(underlying) {
                return text
            }
            return nil
        }
        return words(String(describing: error))
    }

    /// A `Decodable` type's failure: what is wrong, and where (the key path), never the enum's dump.
    static func decodingText(_ error: DecodingError) -> String {
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? "" : " at `\(path)`"
        }
        switch error {
        case .keyNotFound(let key, let context): return "the key `\(key.stringValue)` is missing\(at(context))"
        case .typeMismatch(_, let context): return "a value has the wrong type\(at(context))"
        case .valueNotFound(_, let context): return "a value is null or missing\(at(context))"
        case .dataCorrupted(let context):
            return "the data is not valid JSON or not in the expected form\(at(context))"
        @unknown default: return "the data cannot be decoded"
        }
    }

    /// Foundation's file and data errors (`CocoaError.Code`) by their code, for one without a system reason under it.
    static func cocoaText(_ code: Int) -> String? {
        switch code {
        case 4, 260: "no such file"
        case 257, 513: "permission denied"
        case 255: "the file is locked"
        case 256: "the file cannot be read"
        case 258, 514: "the file name is invalid"
        case 259: "the file's content is damaged or not in the expected format"
        case 261, 517: "the text is not in the expected encoding"
        case 262, 518: "the URL's scheme is not supported"
        case 263: "the file is too large to read"
        case 512: "the file cannot be written"
        case 516: "a file of that name exists already"
        case 640: "no space is left on the disk"
        case 642: "the volume is read-only"
        case 3840: "the data is not valid JSON or a property list"
        case 4864: "the data is damaged or not in the expected format"
        case 4865: "a value or key is missing"
        default: nil
        }
    }

    /// `error` in words, always: ``cause(_:)``; else Foundation's error by its code ("no such file", "permission
    /// denied", "is a directory" when the system's reason is under it), a decoding error by what and where; else
    /// what kind of error it was.
    public static func describe(_ error: any Error) -> String {
        if let text = cause(error) { return text }
        if let decoding = error as? DecodingError { return decodingText(decoding) }
        let ns = error as NSError
        if ns.domain == "NSCocoaErrorDomain" {
            return cocoaText(ns.code) ?? "Foundation's file or data error \(ns.code)"
        }
        return "an error without a description (\(type(of: error)))"
    }

    /// The system's text for an errno value (`strerror`).
    public static func systemText(errno code: Int32) -> String { String(cString: strerror(code)) }

    /// `text` if it is words: nil for a Swift enum's case name (one word, perhaps with its values) and for
    /// Foundation's `Error Domain=… Code=…`.
    static func words(_ text: String) -> String? {
        let head = text.prefix { $0 != "(" }
        if text.hasPrefix("Error Domain=") || !head.contains(" ") { return nil }
        return text
    }
}
