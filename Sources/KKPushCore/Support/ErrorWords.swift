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
            return (ns.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap(cause)
        }
        return words(String(describing: error))
    }

    /// `error` in words, always: ``cause(_:)``, else what kind of error it was.
    public static func describe(_ error: any Error) -> String {
        cause(error) ?? "an error without a description (\(type(of: error)))"
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
