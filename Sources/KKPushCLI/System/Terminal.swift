import Foundation

/// Whether a descriptor is a terminal (progress on stderr only when a person watches it).
enum Terminal {
    static func isTTY(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }
}
