#!/usr/bin/env bash
# Checks that every C++ code block in README.md and docs/ is the text of a region of a program in
# examples/ that CI builds and runs. Each ```cpp block must follow a line
#   <!-- snippet: examples/FILE.cc REGION -->
# and equal, byte for byte, the lines between "// snippet-begin: REGION" and
# "// snippet-end: REGION" in that file. Usage: check-snippets.sh [SOURCE_DIR]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0
checked=0

# region FILE NAME: prints the lines strictly between the region's markers.
region() {
  awk -v name="$2" '
    $0 ~ "^[[:space:]]*// snippet-end: " name "$" { if (!inside) bad = 1; inside = 0; found_end++ }
    inside { print }
    $0 ~ "^[[:space:]]*// snippet-begin: " name "$" { inside = 1; found_begin++ }
    END { if (found_begin != 1 || found_end != 1 || bad) exit 3 }' "$1"
}

while IFS= read -r -d '' doc; do
  # Split the document's C++ blocks into numbered files, each with its marker's line on top.
  rm -f "$work"/block.*
  awk -v dir="$work" '
    /^[[:space:]]*(```|~~~)[[:space:]]*(cpp|c\+\+|cc|cxx|h|hpp)([[:space:]].*)?$/ {
      n++; out = dir "/block." n; print (last ~ /^<!-- snippet: / ? last : "NO MARKER") > out; inside = 1; next
    }
    inside && /^[[:space:]]*(```|~~~)[[:space:]]*$/ { inside = 0; close(out); last = ""; next }
    inside { print > out; next }
    NF { last = $0 }' "$doc"
  for block in "$work"/block.*; do
    [[ -e "$block" ]] || continue
    checked=$((checked + 1))
    marker="$(head -n 1 "$block")"
    if [[ ! "$marker" =~ ^\<!--\ snippet:\ ([^ ]+)\ ([A-Za-z0-9_-]+)\ --\>$ ]]; then
      echo "$doc: a C++ block without a '<!-- snippet: examples/FILE.cc REGION -->' line before it" >&2
      failed=1
      continue
    fi
    file="$root/${BASH_REMATCH[1]}"; name="${BASH_REMATCH[2]}"
    if ! region "$file" "$name" > "$work/region" 2>/dev/null; then
      echo "$doc: region '$name' not found once, begin before end, in ${BASH_REMATCH[1]}" >&2
      failed=1
      continue
    fi
    if ! diff -u --label "${BASH_REMATCH[1]} ($name)" --label "$doc" "$work/region" <(tail -n +2 "$block") >&2; then
      failed=1
    fi
  done
done < <(find "$root/README.md" "$root/docs" -name '*.md' -print0)

if [[ $checked -eq 0 ]]; then
  echo "check-snippets: no C++ block found under $root (README.md, docs/): wrong directory?" >&2
  exit 1
fi
if [[ $failed -ne 0 ]]; then
  echo "check-snippets: documentation and examples/ differ (see above)" >&2
  exit 1
fi
echo "check-snippets: $checked C++ blocks match their programs in examples/"
