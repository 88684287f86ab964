package import Foundation

/// Whether a descriptor is a terminal (progress on stderr only when a person watches it).
package enum Terminal {
    package static func isTTY(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }
}
