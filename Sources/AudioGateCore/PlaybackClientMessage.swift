import Foundation

/// A text message a client sends on the playback WebSocket.
public enum PlaybackClientMessage: Sendable, Equatable {
    /// Longest mark name or clear id accepted, in UTF-8 bytes.
    public static let maximumNameBytes = 256

    /// `{"type":"audio","data":"<base64>"}`: PCM in the socket's format.
    case audio(data: [UInt8])
    /// `{"type":"mark","name":"..."}`: report when everything sent before has been heard.
    case mark(name: String)
    /// `{"type":"clear","id":"..."}`: flush this stream now (barge-in); `cleared` echoes the optional id.
    case clear(id: String?)
    /// `{"type":"pause"}`: hold this stream where it is; its queue is kept.
    case pause
    /// `{"type":"resume"}`: play this stream on from where it was held.
    case resume

    /// Parses one text frame; unknown extra fields are ignored.
    public static func decode(_ text: String) throws(ProtocolError) -> PlaybackClientMessage {
        guard JSONNesting.depth(of: text.utf8) <= maximumNesting else {
            throw ProtocolError(.invalidJSON, "the message nests deeper than \(maximumNesting) levels")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            throw ProtocolError(.invalidJSON, "the message is not valid JSON")
        }
        guard let fields = object as? [String: Any] else {
            throw ProtocolError(.notAnObject, "the message must be a JSON object")
        }
        guard let typeValue = fields["type"] else {
            throw ProtocolError(.unknownType, "the message has no \"type\"")
        }
        guard let type = typeValue as? String else {
            throw ProtocolError(.invalidField, "\"type\" must be a string")
        }
        switch type {
        case "audio":
            let data = try string(fields, "data")
            guard let bytes = Base64.decode(data) else {
                throw ProtocolError(.invalidBase64, "\"data\" is not valid base64")
            }
            return .audio(data: bytes)
        case "mark":
            return .mark(name: try name(fields, "name", of: "mark names"))
        case "clear":
            return .clear(id: fields["id"] == nil ? nil : try name(fields, "id", of: "clear ids"))
        case "pause":
            return .pause
        case "resume":
            return .resume
        default:
            let shown = type.utf8.count <= 64 ? type : String(decoding: type.utf8.prefix(64), as: UTF8.self) + "..."
            throw ProtocolError(.unknownType, "unknown message type \(JSONText.quoted(shown)); expected audio, mark, clear, pause or resume")
        }
    }

    /// Deepest bracket nesting accepted; checked before parsing so no JSON parser recursion can exhaust the stack.
    static let maximumNesting = 32

    /// A client's label, echoed back: a string of at most `maximumNameBytes`.
    private static func name(_ fields: [String: Any], _ key: String, of what: String) throws(ProtocolError) -> String {
        let name = try string(fields, key)
        guard name.utf8.count <= maximumNameBytes else {
            throw ProtocolError(.nameTooLong, "\(what) are at most \(maximumNameBytes) bytes")
        }
        return name
    }

    private static func string(_ fields: [String: Any], _ key: String) throws(ProtocolError) -> String {
        guard let value = fields[key] else {
            throw ProtocolError(.missingField, "the message needs a \"\(key)\" field")
        }
        guard let text = value as? String else {
            throw ProtocolError(.invalidField, "\"\(key)\" must be a string")
        }
        return text
    }
}
