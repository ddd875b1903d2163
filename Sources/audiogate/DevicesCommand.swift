import ArgumentParser
import AudioGateDevices
import Foundation

/// `audiogate devices`: lists the PCMs ALSA knows, plus the built-in loopback.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List ALSA PCM devices (name, description, capture/playback).")

    @Flag(help: "Print JSON: {\"devices\":[{\"name\",\"description\",\"capture\",\"playback\"}]}.")
    var json = false

    func run() throws {
        let devices = DeviceList.all()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = try encoder.encode(["devices": devices])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        let width = min(40, devices.map(\.name.count).max() ?? 10)
        print("NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  DIR    DESCRIPTION")
        for device in devices {
            let direction = device.capture && device.playback ? "in/out" : device.capture ? "in" : "out"
            let name = device.name.count > width ? device.name : device.name.padding(toLength: width, withPad: " ", startingAt: 0)
            print("\(name)  \(direction.padding(toLength: 6, withPad: " ", startingAt: 0)) \(device.description)")
        }
    }
}
