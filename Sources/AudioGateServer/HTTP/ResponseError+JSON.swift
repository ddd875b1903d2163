import AudioGateCore
import Foundation

extension ResponseError {
    /// The body clients get: `{"error":{"code","message"}}`.
    var responseJSON: String {
        let object = ["error": ["code": reason.rawValue, "message": message]]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
