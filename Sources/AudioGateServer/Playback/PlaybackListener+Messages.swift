import AudioGateCore

extension PlaybackListener {
    /// Parses a client's text message; a malformed one is answered with an `error` event and nil.
    func decode(_ text: String) -> PlaybackClientMessage? {
        do throws(ProtocolError) {
            return try PlaybackClientMessage.decode(text)
        } catch {
            send(.error(code: error.code.rawValue, message: error.message))
            return nil
        }
    }
}
