#!/usr/bin/env bash
# Checks the links between the repository's Markdown pages (README.md, docs/*.md and the other
# *.md files outside .build and .venv) and exits 1 when any is broken:
#   - a relative link must name a file or directory of the repository (images included);
#   - a `#fragment` must name a heading of the page it points to, as GitHub makes anchors
#     (lower case, punctuation but `-` and `_` dropped, spaces as `-`, `-1`, `-2` for repeats);
#   - no link or path may leave the repository (`../` above its root), and in a git checkout
#     a file it names must be tracked (a fresh clone has only those);
#   - inline links, reference-style definitions (`[label]: path`) and HTML `href`/`src` count.
# Links to http(s) and mailto addresses are not fetched. Code blocks and inline code are skipped.
#
# Usage: scripts/check-doc-links.sh   (prints file:line: problem for each broken link)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec python3 - "$ROOT" <<'PY'
import os, re, sys

root = os.path.realpath(sys.argv[1])
pages = []
for directory, subdirs, files in os.walk(root):
    subdirs[:] = [d for d in subdirs if not d.startswith(".")]
    pages += [os.path.join(directory, f) for f in files if f.endswith(".md")]

def prose_lines(path):
    """The page's lines outside fenced code, with inline code removed, numbered from 1."""
    fence = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield number, re.sub(r"`[^`]*`", "", line)

def raw_anchors(path):
    """GitHub's anchors for the headings of a page (inline code's words count, its backticks not)."""
    seen, result, fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result

# In a git checkout, a link must name a file git tracks: an untracked one is not in a clone.
try:
    import subprocess
    listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
    tracked = set(listed.decode("utf-8").split("\0")) - {""}
except Exception:
    tracked = None

problems = 0
cache = {}
for page in sorted(pages):
    rel_page = os.path.relpath(page, root)
    for number, line in prose_lines(page):
        targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line)   # [text](target)
        targets += re.findall(r"^\s*\[[^\]]+\]:\s*<?([^\s>]+)>?", line)       # [label]: target
        targets += re.findall(r"<(?:a|img)\b[^>]*\b(?:href|src)=\"([^\"]+)\"", line)  # HTML
        for target in targets:
            if re.match(r"^(https?:|mailto:)", target):
                continue
            path, _, fragment = target.partition("#")
            dest = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = f"{rel_page}:{number}: {target}"
            if not (dest == root or dest.startswith(root + os.sep)):
                print(f"{where}: leaves the repository"); problems += 1; continue
            if not os.path.exists(dest):
                print(f"{where}: no such file"); problems += 1; continue
            if tracked is not None and os.path.isfile(dest) and os.path.relpath(dest, root) not in tracked:
                print(f"{where}: a file git does not track (a fresh clone lacks it)"); problems += 1; continue
            if fragment:
                if not dest.endswith(".md"):
                    print(f"{where}: a fragment on a file that is not Markdown"); problems += 1; continue
                if dest not in cache:
                    cache[dest] = raw_anchors(dest)
                if fragment not in cache[dest]:
                    print(f"{where}: no heading with that anchor in {os.path.relpath(dest, root)}"); problems += 1
if problems:
    print(f"check-doc-links: {problems} broken link(s)", file=sys.stderr)
    sys.exit(1)
print(f"check-doc-links: ok: every link between {len(pages)} Markdown pages resolves", file=sys.stderr)
PY
