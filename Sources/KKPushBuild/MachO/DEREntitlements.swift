import Foundation
import KKPushCore
import SwiftASN1

/// Decodes the DER entitlements blob's payload (`0xfade7172`) into property-list values.
///
/// Two encodings are in use. Apple's codesign writes CoreEntitlements' form: `[APPLICATION 16] { INTEGER 1,
/// [CONTEXT 16] { SEQUENCE { UTF8String key, value }, ... } }`. Some other signers write the older form
/// CoreEntitlements also reads ("V0"): the dictionary alone, as a `SET OF SEQUENCE { UTF8String key, value }`. Values are
/// BOOLEAN, INTEGER, UTF8String, OCTET STRING (data), SEQUENCE (an array of values) and nested dictionaries
/// (`[CONTEXT 16]`, or `SET` in the older form). Anything else is an error naming the key path.
enum DEREntitlements {
    /// The deepest nesting of ASN.1 elements read (a key-value pair and its dictionary are two levels each).
    static let maximumDepth = 32

    /// `[APPLICATION 16]` constructed: CoreEntitlements' `CCDER_ENTITLEMENTS`.
    static let entitlementsTag = ASN1Identifier(tagWithNumber: 16, tagClass: .application)
    /// `[CONTEXT 16]` constructed: CoreEntitlements' dictionary.
    static let dictionaryTag = ASN1Identifier(tagWithNumber: 16, tagClass: .contextSpecific)

    static func decode(_ bytes: [UInt8], context: MachOReadContext, blobName: String) throws -> PropertyListValue {
        let root: ASN1Node
        do {
            root = try DER.parse(bytes)
        } catch {
            throw context.error(
                .buildMachoEntitlementsUnreadable, blobName,
                "its \(bytes.count) bytes are no DER element, or one nested too deeply (\(error))", underlying: error)
        }
        let decoder = Decoder(context: context, blobName: blobName)
        return try decoder.decodeRoot(root)
    }

    private struct Decoder {
        let context: MachOReadContext
        let blobName: String

        func fail(_ path: String, _ problem: String) -> KKPushError {
            let place = path.isEmpty ? "" : "at \(path): "
            return context.error(.buildMachoEntitlementsUnreadable, blobName, place + problem)
        }

        func decodeRoot(_ root: ASN1Node) throws -> PropertyListValue {
            if root.identifier == .set, case .constructed = root.content {
                return try decodeDictionary(root, path: "", depth: 1)
            }
            guard root.identifier == DEREntitlements.entitlementsTag, case .constructed(let children) = root.content
            else {
                throw fail(
                    "",
                    "it starts with the ASN.1 tag \(root.identifier), not [APPLICATION 16] (CoreEntitlements) "
                        + "or a SET (the older form)")
            }
            let parts = Array(children.prefix(3))
            guard parts.count == 2 else {
                throw fail("", "[APPLICATION 16] holds \(parts.count) elements, not a version and a dictionary")
            }
            let version: Int
            do {
                version = try Int(derEncoded: parts[0])
            } catch {
                throw fail("", "the version is no INTEGER (\(parts[0].identifier))")
            }
            guard version == 1 else {
                throw fail("", "the version is \(version); this reader knows version 1")
            }
            guard parts[1].identifier == DEREntitlements.dictionaryTag else {
                throw fail("", "the second element is \(parts[1].identifier), not the [CONTEXT 16] dictionary")
            }
            return try decodeDictionary(parts[1], path: "", depth: 2)
        }

        func decodeDictionary(_ node: ASN1Node, path: String, depth: Int) throws -> PropertyListValue {
            guard depth <= DEREntitlements.maximumDepth else {
                throw fail(path, "the dictionaries nest more than \(DEREntitlements.maximumDepth) levels deep")
            }
            guard case .constructed(let children) = node.content else {
                throw fail(path, "a dictionary is primitive, not constructed")
            }
            var result: [String: PropertyListValue] = [:]
            for (index, pair) in children.enumerated() {
                let pairPath = path.isEmpty ? "entry \(index + 1)" : "\(path), entry \(index + 1)"
                guard pair.identifier == .sequence, case .constructed(let members) = pair.content else {
                    throw fail(pairPath, "a dictionary entry is \(pair.identifier), not a SEQUENCE of key and value")
                }
                let parts = Array(members.prefix(3))
                guard parts.count == 2 else {
                    throw fail(pairPath, "a dictionary entry holds \(parts.count) elements, not a key and a value")
                }
                guard parts[0].identifier == .utf8String, case .primitive(let keyBytes) = parts[0].content,
                    let key = String(bytes: keyBytes, encoding: .utf8)
                else {
                    throw fail(pairPath, "the key is \(parts[0].identifier), not a UTF8String")
                }
                let keyPath = path.isEmpty ? key : "\(path).\(key)"
                guard result[key] == nil else {
                    throw fail(keyPath, "the key appears twice")
                }
                result[key] = try decodeValue(parts[1], path: keyPath, depth: depth + 2)
            }
            return .dictionary(result)
        }

        func decodeValue(_ node: ASN1Node, path: String, depth: Int) throws -> PropertyListValue {
            guard depth <= DEREntitlements.maximumDepth else {
                throw fail(path, "the values nest more than \(DEREntitlements.maximumDepth) levels deep")
            }
            switch (node.identifier, node.content) {
            case (.boolean, .primitive(let bytes)):
                guard bytes.count == 1, let byte = bytes.first else {
                    throw fail(path, "a BOOLEAN has \(bytes.count) content bytes, not 1")
                }
                return .bool(byte != 0)
            case (.integer, .primitive):
                do {
                    return .integer(try Int(derEncoded: node))
                } catch {
                    throw fail(path, "an INTEGER is malformed or does not fit in 64 bits")
                }
            case (.utf8String, .primitive(let bytes)):
                guard let string = String(bytes: bytes, encoding: .utf8) else {
                    throw fail(path, "a UTF8String is not UTF-8")
                }
                return .string(string)
            case (.octetString, .primitive(let bytes)):
                return .data(Data(bytes))
            case (.sequence, .constructed(let items)):
                var values: [PropertyListValue] = []
                for (index, item) in items.enumerated() {
                    values.append(try decodeValue(item, path: "\(path)[\(index)]", depth: depth + 1))
                }
                return .array(values)
            case (DEREntitlements.dictionaryTag, .constructed), (.set, .constructed):
                return try decodeDictionary(node, path: path, depth: depth)
            default:
                throw fail(path, "the value's ASN.1 tag \(node.identifier) is not one entitlements can have")
            }
        }
    }
}
