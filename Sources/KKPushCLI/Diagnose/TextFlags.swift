import ArgumentParser
import Foundation

/// Checks of text flags, for `validate()`: a flag given an empty value ('') gets a `ValidationError` naming
/// it (exit 64), never a silent "nothing found" or a confusing message about an empty value later on.
enum TextFlags {
    /// Every flag in `flags` that was given must not be empty (or only white space).
    static func nonEmpty(_ flags: [(flag: String, value: String?)]) throws {
        let empty = flags.filter {
            $0.value.map { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty } ?? false
        }
        .map(\.flag)
        guard !empty.isEmpty else { return }
        throw ValidationError(
            "\(empty.joined(separator: ", ")) \(empty.count == 1 ? "is" : "are") given an empty value: give a value, or leave \(empty.count == 1 ? "the flag" : "them") out."
        )
    }
}
