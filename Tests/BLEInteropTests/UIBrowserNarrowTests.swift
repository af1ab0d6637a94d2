import Foundation
import XCTest

/// Every table of `ble ui` on a phone-sized screen: the headers shown line up with the cells
/// shown, row by row (a column dropped for the width goes as a whole).
extension UIBrowserTests {
    func testOnANarrowScreenEveryTablesHeadersMatchItsCells() throws {
        let ui = try UIProcess()
        defer { ui.stop() }
        let (root, token) = parts(ui)
        // Each page's table once its rows are in (the demo's devices, monitor and
        // accelerometers; /serve's "none" row): the headers shown and each row's cells shown.
        let measure = ##"""
        (() => { const t = document.querySelector("table"); if (!t) return null;
          const rows = Array.from(t.querySelectorAll("tbody tr")); if (rows.length === 0) return null;
          const shown = e => getComputedStyle(e).display !== "none";
          return { heads: Array.from(t.querySelectorAll("thead th")).filter(shown).length,
                   all: t.querySelectorAll("thead th").length,
                   cells: rows.map(r => Array.from(r.children).filter(shown).reduce((n, c) => n + (c.colSpan || 1), 0)) }; })()
        """##
        for path in ["/devices", "/heart-rate", "/accel", "/serve"] {
            let result = try python("browser.py", ["--url", "\(root)\(path)?token=\(token)", "--until", measure, "--width", "400", "--height", "800", "--timeout", "30"], timeout: 60)
            XCTAssertTrue(result.succeeded, "\(path): \(result)")
            let table = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(path): \(result.stdout)")
            let heads = try XCTUnwrap(table["heads"] as? Int), all = try XCTUnwrap(table["all"] as? Int)
            let cells = try XCTUnwrap(table["cells"] as? [Int])
            XCTAssertFalse(cells.isEmpty, path)
            for (row, count) in cells.enumerated() {
                XCTAssertEqual(count, heads, "\(path) row \(row): \(count) cells shown under \(heads) headers")
            }
            // The device lists drop their advertisement column; the others keep every column.
            XCTAssertEqual(heads, ["/devices", "/heart-rate"].contains(path) ? all - 1 : all, "\(path): \(table)")
        }
    }
}
