/// The receiving half of the transport: decrypts each binary message and reassembles fragments
/// (type 1) into whole messages, bounded by `maximumMessageBytes`.
struct SendspinReceiver: Sendable {
    /// A complete message: its type byte and what follows it.
    struct Message: Sendable, Equatable {
        var type: UInt8
        var body: ArraySlice<UInt8>
    }

    /// Type 0: a JSON message.
    static let jsonType: UInt8 = 0
    static let fragmentType: UInt8 = 1
    /// Type 4: a player audio chunk.
    static let audioChunkType: UInt8 = 4
    static let firstFlag: UInt8 = 0x02
    static let lastFlag: UInt8 = 0x01
    /// Largest reassembled message: a second of 192 kHz 8-channel 24-bit PCM is 4.6 MB.
    static let maximumMessageBytes = 8 << 20

    private var cipher: NoiseCipherState
    private var fragments: (type: UInt8, bytes: [UInt8])?

    init(cipher: NoiseCipherState) {
        self.cipher = cipher
    }

    /// Decrypts what follows a re-handshake with its new key.
    mutating func rekey(_ cipher: NoiseCipherState) {
        self.cipher = cipher
    }

    /// The message `ciphertext` completes, nil while a fragmented one goes on; throws `.decrypt`
    /// for a message that does not authenticate and `.malformedMessage` for a broken fragment sequence.
    mutating func receive(_ ciphertext: ArraySlice<UInt8>) throws(SendspinError) -> Message? {
        guard ciphertext.count <= NoiseHandshake.maximumMessageBytes else {
            throw SendspinError(.messageTooLarge, "a transport message of \(ciphertext.count) bytes")
        }
        let plaintext = try cipher.decrypt(ad: [], ciphertext)
        guard let type = plaintext.first else { throw SendspinError(.malformedMessage, "an empty message") }
        guard type == Self.fragmentType else {
            guard fragments == nil else {
                throw SendspinError(.malformedMessage, "a message of type \(type) inside a fragmented one")
            }
            return Message(type: type, body: plaintext[1...])
        }
        guard plaintext.count >= 2 else { throw SendspinError(.malformedMessage, "a fragment without flags") }
        let flags = plaintext[1]
        guard flags & ~(Self.firstFlag | Self.lastFlag) == 0 else {
            throw SendspinError(.malformedMessage, "fragment flags 0x\(String(flags, radix: 16)) set reserved bits")
        }
        var data = plaintext[2...]
        if flags & Self.firstFlag != 0 {
            guard fragments == nil else { throw SendspinError(.malformedMessage, "a first fragment inside a fragmented message") }
            guard let original = data.first, original != Self.fragmentType else {
                throw SendspinError(.malformedMessage, "a first fragment without a message type")
            }
            fragments = (original, [])
            data = data.dropFirst()
        }
        guard var pending = fragments else { throw SendspinError(.malformedMessage, "a fragment with none started") }
        guard pending.bytes.count + data.count <= Self.maximumMessageBytes else {
            throw SendspinError(.messageTooLarge, "a fragmented message over \(Self.maximumMessageBytes) bytes")
        }
        fragments = nil
        pending.bytes += data
        guard flags & Self.lastFlag != 0 else {
            fragments = pending
            return nil
        }
        return Message(type: pending.type, body: pending.bytes[...])
    }
}
