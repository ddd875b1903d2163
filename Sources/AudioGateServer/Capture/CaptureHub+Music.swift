extension CaptureHub {
    /// Sends a `music` message (what the music player plays now) to every capture client that
    /// asked for them, and keeps it for clients that ask later. Off the capture thread: it is rare.
    func announceMusic(_ json: String) {
        // Under the lock, so a client joining meanwhile ends with this message, never an older one.
        music.withLock { current in
            current = json
            let listeners = members.withLock { $0.filter { $0.parameters.music } }
            for subscriber in listeners { subscriber.deliverMusic(json) }
        }
    }

    /// Hands a client that asked for music events the last message, if there was one.
    func catchUpMusic(_ subscriber: CaptureSubscriber) {
        guard subscriber.parameters.music else { return }
        music.withLock { current in
            if let current { subscriber.deliverMusic(current) }
        }
    }
}
