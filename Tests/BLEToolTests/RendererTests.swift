import BLEHost
import BLEProfiles
import BLEWire
import XCTest
import BLESystems

/// The pure renderers of `ble heart-rate` and `ble accel` on fixed input: sparkline, number
/// text, the terminal chart, the SVG chart, plain and JSON lines, the live screen.
final class RendererTests: XCTestCase {
    func testSparklineScalesBetweenTheSmallestAndLargestShownValue() {
        XCTAssertEqual(Sparkline.render([60, 70, 80, 90, 100, 110, 120, 130], width: 8), "▁▂▃▄▅▆▇█")
        XCTAssertEqual(Sparkline.render([130, 60], width: 8), "█▁")
        // Only the last `width` values are drawn, scaled among themselves.
        XCTAssertEqual(Sparkline.render([1000, 60, 130], width: 2), "▁█")
        XCTAssertEqual(Sparkline.render([72, 72, 72], width: 10), "▄▄▄", "a flat line sits in the middle")
        XCTAssertEqual(Sparkline.render([], width: 10), "")
        XCTAssertEqual(Sparkline.render([1, 2], width: 0), "")
        XCTAssertEqual(Sparkline.render([1, .nan, 2], width: 3), "▁ █")
    }

    func testNumberText() {
        XCTAssertEqual(NumberText.fixed(0.8329, 3), "0.833")
        XCTAssertEqual(NumberText.fixed(-1.5, 1), "-1.5")
        XCTAssertEqual(NumberText.fixed(-0.0004, 3), "0.000")
        XCTAssertEqual(NumberText.fixed(2, 2), "2.00")
        XCTAssertEqual(NumberText.fixed(1.005, 0), "1")
        XCTAssertEqual(NumberText.fixed(.nan, 2), "nan")
        XCTAssertEqual(NumberText.fixed(-.infinity, 2), "-inf")
        XCTAssertEqual(NumberText.seconds(.milliseconds(10_049)), "10.0s")
        XCTAssertEqual(NumberText.right("7", 3), "  7")
        XCTAssertEqual(NumberText.left("abcdef", 3), "abc")
    }

    func testTerminalChartDrawsEachSeriesOnItsRowsNewestOnTheRight() {
        let chart = TerminalChart.render([
            TerminalChart.Series(mark: "x", color: 31, values: [1, 0, -1]),
            TerminalChart.Series(mark: "z", color: 34, values: [-1, -1]),
        ], width: TerminalChart.labelWidth + 4, height: 3)
        XCTAssertEqual(chart, [
            "   1.00 ┤ x  ",
            "   0.00 ┤  x ",
            "  -1.00 ┤  zz",
            "        └────",
        ])
    }

    func testTerminalChartWidensAFlatRangeAndColoursOnRequest() {
        let chart = TerminalChart.render([TerminalChart.Series(mark: "y", color: 32, values: [0.25, 0.25])], width: 11, height: 3, colors: true)
        XCTAssertEqual(chart[0], "   0.75 ┤  ")
        XCTAssertEqual(chart[1], "   0.25 ┤\u{1B}[32my\u{1B}[0m\u{1B}[32my\u{1B}[0m")
        XCTAssertEqual(chart[2], "  -0.25 ┤  ")
        XCTAssertEqual(TerminalChart.render([], width: 12, height: 2).count, 3, "an empty chart still has its axis")
    }

    func testSVGChartHasAxesTicksOnePolylinePerSeriesAndALegend() {
        let chart = SVGChart(title: "a <b> & \"c\"", xLabel: "time (s)", yLabel: "g", width: 200, height: 150)
        let svg = chart.render(times: [0, 1, 2], series: [
            SVGChart.Series(name: "x", color: "#d62728", values: [0, 1, 0.5]),
            SVGChart.Series(name: "y", color: "#2ca02c", values: [1, 0, .nan]),
        ])
        XCTAssertTrue(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"150\""))
        XCTAssertTrue(svg.hasSuffix("</svg>\n"))
        XCTAssertTrue(svg.contains(">a &lt;b&gt; &amp; &quot;c&quot;</text>"), "the title is escaped")
        // Plot area: x 70...180 (110 wide), y 40...100 (60 high); time 0...2, values 0...1.
        XCTAssertTrue(svg.contains("<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" points=\"70,100 125,40 180,70\"/>"), svg)
        XCTAssertTrue(svg.contains("points=\"70,40 125,100\""), "a NaN ends the y line: \(svg)")
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 2)
        for tick in ["0", "0.5", "1", "1.5", "2"] {
            XCTAssertTrue(svg.contains("text-anchor=\"middle\">\(tick)</text>"), "time tick \(tick)")
        }
        for tick in ["0", "0.2", "0.4", "0.6", "0.8", "1"] {
            XCTAssertTrue(svg.contains("text-anchor=\"end\">\(tick)</text>"), "value tick \(tick)")
        }
        XCTAssertTrue(svg.contains("<line x1=\"70\" y1=\"40\" x2=\"70\" y2=\"100\" stroke=\"black\"/>"), "the y axis")
        XCTAssertTrue(svg.contains("<line x1=\"70\" y1=\"100\" x2=\"180\" y2=\"100\" stroke=\"black\"/>"), "the x axis")
        XCTAssertTrue(svg.contains(">x</text>") && svg.contains(">y</text>"), "the legend names the series")
    }

    func testSVGChartWithoutSamplesSaysSo() {
        let svg = SVGChart(title: "empty", xLabel: "t", yLabel: "v").render(times: [], series: [SVGChart.Series(name: "x", color: "red", values: [])])
        XCTAssertFalse(svg.contains("<polyline"))
        XCTAssertTrue(svg.contains(">no samples</text>"))
    }

    func testSVGTicksAreRoundNumbers() {
        XCTAssertEqual(SVGChart.ticks(0, 1), [0, 0.2, 0.4, 0.6000000000000001, 0.8, 1])
        XCTAssertEqual(SVGChart.ticks(-1.2, 1.1), [-1, -0.5, 0, 0.5, 1])
        XCTAssertEqual(SVGChart.ticks(0, 37), [0, 10, 20, 30])
        XCTAssertEqual(SVGChart.ticks(1, 1), [])
        XCTAssertEqual(SVGChart.label(0.6000000000000001), "0.6")
        XCTAssertEqual(SVGChart.n(-0.001), "0")
        XCTAssertEqual(SVGChart.n(12.5), "12.5")
    }

    // MARK: Heart rate

    func testHeartRateJSONHasTheFourFieldsWithRRInSeconds() {
        let m = HeartRateMeasurement(beatsPerMinute: 72, valueFormat: .uint16, sensorContact: .detected, energyExpended: 15, rrIntervals: [853, 1024])
        XCTAssertEqual(HeartRateMonitorLines.json(m), #"{"bpm":72,"contact":"detected","energyKJ":15,"rrIntervals":[0.8330078125,1]}"#)
        let bare = HeartRateMeasurement(beatsPerMinute: 60, sensorContact: .notDetected)
        XCTAssertEqual(HeartRateMonitorLines.json(bare), #"{"bpm":60,"contact":"notDetected","energyKJ":null,"rrIntervals":[]}"#)
    }

    func testHeartRatePlainLines() {
        let m = HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .detected, energyExpended: 15, rrIntervals: [853, 849])
        XCTAssertEqual(HeartRateMonitorLines.lines(for: .measurement(m, at: .zero)), ["measurement 72 bpm  contact detected  energy 15 kJ  RR 0.833 s 0.829 s"])
        XCTAssertEqual(HeartRateMonitorLines.lines(for: .bodySensorLocation("Chest")), ["location    Chest"])
        XCTAssertEqual(HeartRateMonitorLines.lines(for: .tick(now: .seconds(1))), [])
        let weak = Self.device(name: nil, rssi: -81, at: .seconds(3))
        XCTAssertEqual(HeartRateMonitorLines.lines(for: .refused(weak, minimumRSSI: -70)),
                       ["refused     unnamed device C0:00:00:00:00:01/random: RSSI -81 dBm is weaker than -70 dBm; waiting for a stronger monitor"])
        XCTAssertEqual(HeartRateMonitorLines.device(weak, now: .milliseconds(5_500)),
                       "unnamed device       C0:00:00:00:00:01 rnd  -81 dBm   2.5s  services=[180D]")
    }

    func testHeartRateScreenListsMonitorsThenShowsTheRateWithASparkline() {
        var screen = HeartRateMonitorScreen(minimumRSSI: -70)
        let strong = Self.device(name: "HRM", rssi: -45, at: .seconds(1), address: 2)
        let weak = Self.device(name: nil, rssi: -80, at: .seconds(1))
        screen.apply(.scanning, now: .seconds(1))
        screen.apply(.device(.appeared(weak)), now: .seconds(1))
        screen.apply(.device(.appeared(strong)), now: .seconds(1))
        screen.apply(.tick(now: .seconds(2)), now: .seconds(2))
        XCTAssertEqual(screen.lines(width: 200), [
            "Heart-rate monitors (service 180D); connecting to the strongest at -70 dBm or better",
            "",
            "NAME                 ADDRESS                   RSSI    AGE  ADVERTISEMENT",
            "HRM                  C0:00:00:00:00:02 rnd  -45 dBm   1.0s  services=[180D] name=\"HRM\"",
            "unnamed device       C0:00:00:00:00:01 rnd  -80 dBm   1.0s  services=[180D]",
            "",
            "Ctrl-C to stop",
        ])
        screen.apply(.device(.disappeared(weak)), now: .seconds(12))
        XCTAssertFalse(screen.lines().contains { $0.contains("unnamed device") }, "a monitor that dropped off is not listed")

        screen.apply(.connected(strong.address, name: "HRM", mtu: 517), now: .seconds(13))
        screen.apply(.bodySensorLocation("Chest"), now: .seconds(13))
        for (i, bpm) in [60, 90, 120].enumerated() {
            let m = HeartRateMeasurement(beatsPerMinute: UInt16(bpm), sensorContact: .detected, energyExpended: UInt16(i), rrIntervals: i == 2 ? [512] : [])
            screen.apply(.measurement(m, at: .seconds(14 + i)), now: .seconds(14 + i))
        }
        XCTAssertEqual(screen.lines(width: 60), [
            "HRM  C0:00:00:00:00:02/random  ATT MTU 517  sensor location:", // cut at 60 columns
            "",
            "  120 bpm    contact detected    energy 2 kJ",
            "  RR intervals: 0.500 s",
            "  ▁▅█  60–120 bpm, last 3",
            "  3 measurements on this connection",
            "",
            "Ctrl-C to stop",
        ])
        screen.apply(.disconnected(strong.address, reason: "Connection Timeout (0x08)"), now: .seconds(20))
        XCTAssertTrue(screen.lines(width: 200).contains("C0:00:00:00:00:02 disconnected: Connection Timeout (0x08)"))
        XCTAssertTrue(screen.lines(width: 200)[0].hasPrefix("Heart-rate monitors"), "back to the list")
    }

    func testMonitorListJudgesBySecondsWorthOfRSSIAndRefusesWeakOnesOnce() {
        var options = HeartRateMonitorOptions()
        var list = MonitorList()
        let weak = Self.device(name: "Far", rssi: -75, at: .zero)
        list.apply(.appeared(weak))
        XCTAssertEqual(list.decide(options, now: .milliseconds(500)), .wait, "heard for less than a second")
        XCTAssertEqual(list.decide(options, now: .seconds(1)), .refuse(weak))
        XCTAssertEqual(list.decide(options, now: .seconds(2)), .wait, "refused once while it stays listed")
        var near = Self.device(name: "Near", rssi: -90, at: .seconds(2), address: 2)
        list.apply(.appeared(near))
        near.rssi = -70
        near.lastSeen = .milliseconds(2_500)
        list.apply(.updated(near))
        near.rssi = -85
        near.lastSeen = .milliseconds(2_900)
        list.apply(.updated(near))
        XCTAssertEqual(list.decide(options, now: .milliseconds(2_900)), .wait, "not heard for a second yet")
        var judged = near
        judged.rssi = -70
        XCTAssertEqual(list.decide(options, now: .seconds(3)), .connect(judged), "its best reading, -70 dBm, passes the gate")
        XCTAssertEqual(list.sorted.map(\.advertisement.localName), ["Far", "Near"], "the list shows the latest readings")
        list.apply(.disappeared(near))
        list.apply(.disappeared(weak))
        list.apply(.appeared(weak))
        XCTAssertEqual(list.decide(options, now: .seconds(3)), .refuse(weak), "refused again after it came back")

        options.target = weak.address.address
        XCTAssertEqual(list.decide(options, now: .seconds(3)), .fail(weak), "a named monitor that is too weak ends the run")
        options.targetType = .public
        XCTAssertEqual(list.decide(options, now: .seconds(3)), .wait, "the named type must match")
    }

    /// The window slides: a monitor heard at −60 dBm in its first second and at −80 since is
    /// judged at −80 two seconds on (the strongest of the last second), not by the −60 it was
    /// once heard at; brought back close, it passes again.
    func testMonitorListJudgesByTheLastSecondNotTheStrongestEver() {
        var options = HeartRateMonitorOptions()
        var list = MonitorList(window: options.selectionDelay)
        var device = Self.device(name: "Walker", rssi: -60, at: .zero)
        list.apply(.appeared(device))
        for ms in stride(from: 500, through: 2_500, by: 500) {
            device.rssi = -80
            device.lastSeen = .milliseconds(ms)
            list.apply(.updated(device))
        }
        options.target = device.address.address
        var judged = device
        judged.rssi = -80
        XCTAssertEqual(list.decide(options, now: .milliseconds(2_500)), .fail(judged), "carried away: −80 dBm now")
        options.target = nil
        XCTAssertEqual(list.decide(options, now: .milliseconds(2_500)), .refuse(judged))

        device.rssi = -50
        device.lastSeen = .seconds(3)
        list.apply(.updated(device))
        device.rssi = -75
        device.lastSeen = .milliseconds(3_500)
        list.apply(.updated(device))
        judged = device
        judged.rssi = -50
        XCTAssertEqual(list.decide(options, now: .milliseconds(3_500)), .connect(judged), "brought closer: the best of the last second")
    }

    /// A monitor advertising less than once a second is judged by its latest reading.
    func testMonitorListKeepsTheLatestReadingOfASlowAdvertiser() {
        let options = HeartRateMonitorOptions()
        var list = MonitorList(window: options.selectionDelay)
        let slow = Self.device(name: "Slow", rssi: -65, at: .zero)
        list.apply(.appeared(slow))
        XCTAssertEqual(list.decide(options, now: .seconds(3)), .connect(slow))
    }

    // MARK: Accelerometer

    func testAccelerometerLines() {
        let s = AccelerometerSample(x: 0.125, y: -0.5, z: 1)
        XCTAssertEqual(AccelerometerLines.json(s), #"{"x":0.125,"y":-0.5,"z":1}"#)
        XCTAssertEqual(AccelerometerLines.json(AccelerometerSample(x: 0.1, y: 0, z: 0)), #"{"x":0.10000000149011612,"y":0,"z":0}"#,
                       "a Float32 prints as the Double it converts to")
        XCTAssertEqual(AccelerometerLines.lines(for: .sample(s, at: .zero)), ["sample      x   0.125  y  -0.500  z   1.000 g"])
    }

    func testAccelerometerDeviceChoiceListsNamesWithBleAndTakesTheFirstWithService0011() {
        let bumble = Self.device(name: "Bumble", rssi: -40, at: .seconds(1), services: [], address: 1)
        let thermo = Self.device(name: "Thermo", rssi: -30, at: .seconds(1), services: ["0011"], address: 2)
        let accel = Self.device(name: "BLE001", rssi: -60, at: .seconds(2), services: ["0011"], address: 3)
        let other = Self.device(name: "my ble", rssi: -50, at: .seconds(3), services: ["0011"], address: 4)
        let beacon = Self.device(name: "BLE beacon", rssi: -20, at: .zero, services: ["0011"], address: 5, connectable: false)
        let candidates = AccelerometerDeviceChoice.candidates([other, thermo, accel, beacon, bumble])
        XCTAssertEqual(candidates.map(\.advertisement.localName), ["Bumble", "BLE001", "my ble"], "first heard first; no Thermo, no beacon")
        XCTAssertEqual(AccelerometerDeviceChoice.automatic(candidates), accel, "Bumble's name has 'ble' but it advertises no 0011")
        XCTAssertNil(AccelerometerDeviceChoice.automatic([bumble]))
        XCTAssertEqual(AccelerometerDeviceChoice.menu([bumble, accel]), [
            "  1) Bumble               C0:00:00:00:00:01 rnd   -40 dBm  services=[]  (no 0011 advertised)",
            "  2) BLE001               C0:00:00:00:00:03 rnd   -60 dBm  services=[0011]",
        ])
        XCTAssertEqual(AccelerometerDeviceChoice.parsePick(" 2 ", count: 2), 1)
        XCTAssertEqual(AccelerometerDeviceChoice.parsePick("", count: 2), 0, "Enter takes the first")
        XCTAssertNil(AccelerometerDeviceChoice.parsePick("3", count: 2))
        XCTAssertNil(AccelerometerDeviceChoice.parsePick("x", count: 2))
        XCTAssertNil(AccelerometerDeviceChoice.parsePick("1", count: 0))
    }

    func testAccelerometerRecordingDrawsTheLiveChartAndTheSessionSVG() {
        var recording = AccelerometerRecording()
        recording.record(.connected(DeviceAddress(BDAddress(rawValue: 0xC000_0000_0003), type: .random), mtu: 517))
        for i in 0..<4 {
            recording.record(.sample(AccelerometerSample(x: Float(i), y: 0, z: 1), at: .milliseconds(1000 + 200 * i)))
        }
        let screen = recording.screen(width: 40, height: 10, colors: false)
        XCTAssertEqual(screen[0], "C0:00:00:00:00:03/random  —  4 samples  latest x   3.000  y   0.000  z   1.000 g")
        XCTAssertEqual(screen.count, 2 + 4 + 1 + 2, "header, 4 chart rows, axis, legend, hint")
        XCTAssertEqual(screen[2], "   3.00 ┤" + String(repeating: " ", count: 30) + "x", "31 columns, the newest sample in the last")
        XCTAssertEqual(screen[screen.count - 2], "  x x   y y   z z   (g; newest on the right)")
        let svg = recording.svg()
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 3, "x, y and z")
        XCTAssertTrue(svg.contains("4 samples"))
        XCTAssertTrue(svg.contains(">0.6</text>"), "time runs 0 ... 0.6 s from the first sample")
    }

    // MARK: Helpers

    /// A device as a passive scan reports it, first and last heard at `time`.
    static func device(name: String?, rssi: Int8, at time: Duration, services: [BluetoothUUID] = ["180D"], address: UInt64 = 1,
                       connectable: Bool = true) -> ScannedDevice {
        var builder = AdvertisingData.Builder().serviceUUIDs(services)
        if let name { builder = builder.localName(name) }
        var scan = ScanAggregator(active: false, filter: ScanFilter())
        let report = AdvertisingReportInput(kind: connectable ? .connectableUndirected : .nonConnectable,
                                            address: DeviceAddress(BDAddress(rawValue: 0xC000_0000_0000 | address), type: .random),
                                            data: builder.build().encode(), rssi: rssi)
        guard let device = scan.receive(report, now: time).first else { fatalError("the aggregator reports a passive scan's first report") }
        return device
    }
}
