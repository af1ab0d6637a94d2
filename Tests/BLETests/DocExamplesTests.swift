import Foundation
import XCTest

/// Every Swift example of README.md and docs/*.md is compiled by the test suite: each one's lines
/// are, one after another (indentation and blank lines aside), in one of the test files named `…Compile.swift`
/// (`DocExamplesCompile.swift` here for `import BLE`, `DocVirtualExampleCompile.swift` in
/// BLEVirtualRadioTests, `DocExamplesCompile.swift` in CoreBluetoothTests), which their test
/// targets compile. An example edited on one side only fails here.
final class DocExamplesTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The pages with examples: the README and every page under docs/.
    static func pages() throws -> [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return [root.appendingPathComponent("README.md")] + names.map { docs.appendingPathComponent($0) }
    }

    /// The ```swift blocks of a page, each as its trimmed, non-empty lines.
    static func swiftBlocks(in text: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if current == nil {
                if line.hasPrefix("```swift") { current = [] }
            } else if line.hasPrefix("```") {
                blocks.append(current ?? [])
                current = nil
            } else {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty { current?.append(trimmed) }
            }
        }
        return blocks
    }

    /// The test files that hold the compiled copies, each as its trimmed lines.
    static func copies() throws -> [(name: String, lines: [String])] {
        let tests = root.appendingPathComponent("Tests")
        guard let walk = FileManager.default.enumerator(atPath: tests.path) else { return [] }
        var found: [(String, [String])] = []
        for case let path as String in walk where path.hasSuffix("Compile.swift") {
            let text = try String(contentsOf: tests.appendingPathComponent(path), encoding: .utf8)
            found.append((path, text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }))
        }
        return found
    }

    /// Whether `block`'s lines appear in `lines` one after another (blank lines aside): the
    /// whole example, not just its lines somewhere in order, so one with a line missing fails.
    /// An example's `import` lines are the compiled file's own, at its top, so they only need to
    /// be there; lines a compiled file adds around an example (top-level code wrapped in a
    /// function) end with `// wrapper: not in the example`.
    static func contains(_ lines: [String], inOrder block: [String]) -> Bool {
        let lines = lines.filter { !$0.isEmpty && !$0.hasSuffix("// wrapper: not in the example") }
        let imports = block.filter { $0.hasPrefix("import ") }
        let body = block.filter { !$0.hasPrefix("import ") }
        guard imports.allSatisfy(lines.contains) else { return false }
        guard !body.isEmpty, body.count <= lines.count else { return body.isEmpty }
        return (0...(lines.count - body.count)).contains { start in lines[start..<start + body.count].elementsEqual(body) }
    }

    func testEveryDocumentedSwiftExampleIsCompiledByATest() throws {
        let copies = try Self.copies()
        XCTAssertGreaterThanOrEqual(copies.count, 3, "the …Compile.swift files")
        var checked = 0
        for page in try Self.pages() {
            let text = try String(contentsOf: page, encoding: .utf8)
            for (index, block) in Self.swiftBlocks(in: text).enumerated() {
                checked += 1
                let holders = copies.filter { Self.contains($0.lines, inOrder: block) }
                XCTAssertFalse(holders.isEmpty, """
                    \(page.lastPathComponent), Swift example \(index + 1) (starting \(block.first ?? "")): \
                    no …Compile.swift file under Tests/ has its lines one after another
                    """)
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 9, "the README and docs/ hold at least nine Swift examples")
    }

    /// The README keeps its first two examples under "## The library", central then peripheral:
    /// `scripts/check-ble-product.sh` builds them as a user's package would.
    func testTheReadmeLibraryExamplesAreWhereTheProductCheckTakesThem() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "\n## The library\n"), "the README's library section")
        let rest = String(readme[section.upperBound...])
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        let blocks = Self.swiftBlocks(in: String(rest[..<end]))
        XCTAssertEqual(blocks.count, 2, "a central and a peripheral example")
        XCTAssertEqual(blocks.first?.first, "import BLE")
        XCTAssertTrue(blocks.first?.contains { $0.contains("Central.open") } ?? false)
        XCTAssertTrue(blocks.last?.contains { $0.contains("PeripheralManager.open") } ?? false)
    }
}
