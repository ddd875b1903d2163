import Synchronization

/// The bytes recordings take on disk, held under `--max-disk-mb`.
///
/// Writers reserve space before every write. When the cap is reached, `makeRoom` is asked to remove
/// the oldest finished recording; only when none is left does the reservation fail.
final class DiskQuota: Sendable {
    /// The cap in bytes, or nil for none.
    let limitBytes: Int?
    private let used = Mutex<Int>(0)
    private let makeRoom = Mutex<(@Sendable () -> Bool)?>(nil)

    init(limitMegabytes: Int) {
        limitBytes = limitMegabytes > 0 ? limitMegabytes << 20 : nil
    }

    /// Bytes counted now.
    var usedBytes: Int { used.withLock { $0 } }

    /// Sets what frees space: it removes one finished recording and says whether it found one.
    func onFull(_ body: @escaping @Sendable () -> Bool) {
        makeRoom.withLock { $0 = body }
    }

    /// Counts bytes that are already on disk (found at startup).
    func add(_ bytes: Int) {
        used.withLock { $0 += bytes }
    }

    /// Uncounts bytes of removed files.
    func release(_ bytes: Int) {
        used.withLock { $0 = max(0, $0 - bytes) }
    }

    /// Counts `bytes` about to be written, removing old recordings if the cap needs it.
    func reserve(_ bytes: Int) throws(RecordingError) {
        guard let limitBytes else {
            add(bytes)
            return
        }
        while true {
            let fits = used.withLock { used -> Bool in
                guard used + bytes <= limitBytes else { return false }
                used += bytes
                return true
            }
            if fits { return }
            // Outside the lock: removing a recording releases its bytes through this quota.
            guard let makeRoom = makeRoom.withLock({ $0 }), makeRoom() else {
                throw RecordingError(
                    .diskLimit, "recordings reached the disk limit of \(limitBytes >> 20) MB (--max-disk-mb)")
            }
        }
    }
}
